package ledgerclient

import (
	"errors"
	"testing"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// TestSanityTest: the sanity test writes and reads back on the bookie it
// names and nowhere else, leaves no ledger behind, and fails for a
// read-only or unknown bookie rather than use another one.
func TestSanityTest(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	c := newClient(t, testConfig(cl, 1))
	ctx := testCtx(t)
	ids := cl.IDs()
	tests := []struct {
		name    string
		bookie  ledger.BookieID
		entries int
		fails   bool
	}{
		{"first bookie", ledger.BookieID(ids[0]), 10, false},
		{"last bookie", ledger.BookieID(ids[2]), 1, false},
		{"read-only bookie", ledger.BookieID(ids[1]), 10, true},
		{"unknown bookie", "127.0.0.1:1", 10, true},
		{"no entries", ledger.BookieID(ids[0]), 0, true},
	}
	cl.SetReadOnly(1, true)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := c.SanityTest(ctx, tc.bookie, tc.entries)
			if tc.fails != (err != nil) {
				t.Fatalf("SanityTest(%s, %d) = %v, want failure %v", tc.bookie, tc.entries, err, tc.fails)
			}
			if tc.fails && tc.entries > 0 && !errors.Is(err, ledger.ErrNotEnoughBookies) {
				t.Fatalf("SanityTest(%s) = %v, want ErrNotEnoughBookies", tc.bookie, err)
			}
			if ids, err := c.List(ctx); err != nil || len(ids) != 0 {
				t.Fatalf("ledgers left behind: %v, %v", ids, err)
			}
		})
	}
}
