package ledgerproc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"testing"

	"keeper/ledgerstore/ledgerclient"
)

// password is every test ledger's.
var password = []byte("ledgerproc")

// payload returns entry entryID's content: its id and a hash of it, so a
// misplaced, truncated or corrupted entry cannot pass for another.
func payload(entryID int64) []byte {
	sum := sha256.Sum256([]byte(strconv.FormatInt(entryID, 10)))
	return fmt.Appendf(nil, "ledgerproc %d %x", entryID, sum[:8])
}

// readChunkEntries bounds the entries one Read holds.
const readChunkEntries = 1000

// readBack reads entries 0..last through h and returns how many are
// missing or differ from payload; it reports the first few.
func readBack(t *testing.T, ctx context.Context, h *ledgerclient.ReadHandle, last int64) (lost int64) {
	t.Helper()
	reported := 0
	for first := int64(0); first <= last; first += readChunkEntries {
		to := min(last, first+readChunkEntries-1)
		entries, err := h.Read(ctx, first, to)
		next := first
		for _, e := range entries {
			if e.EntryID != next || !bytes.Equal(e.Payload, payload(next)) {
				lost++
				if reported++; reported <= 5 {
					t.Errorf("entry %d: read id %d payload %q, want %q", next, e.EntryID, e.Payload, payload(next))
				}
			}
			next++
		}
		if next <= to {
			lost += to - next + 1
			t.Errorf("read %d..%d: stopped before %d: %v", first, to, next, err)
		}
	}
	return lost
}
