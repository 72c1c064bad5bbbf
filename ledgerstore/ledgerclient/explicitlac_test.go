package ledgerclient

import (
	"context"
	"strings"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// TestExplicitLAC writes a few entries and stops, the ledger left open.
// Without an explicit LAC the bookies know only the LAC the last add
// carried, one short of the last entry; with explicitLacInterval the
// writer sends the last one, a LAC read finds it and a tailing reader
// receives the last entry.
func TestExplicitLAC(t *testing.T) {
	const entries = 5
	tests := []struct {
		name     string
		interval time.Duration
		wantLAC  int64
	}{
		{"off", 0, entries - 2},
		{"on", 50 * time.Millisecond, entries - 1},
	}
	cl := ledgertest.Start(t, 3)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			wcfg := testConfig(cl, uint64(30+i))
			wcfg.ExplicitLACInterval = tc.interval
			w, err := newClient(t, wcfg).Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2,
				Password: testPassword})
			if err != nil {
				t.Fatal(err)
			}
			id := w.ID()
			for e := range int64(entries) {
				if _, err := w.Append(ctx, payload(id, e)); err != nil {
					t.Fatal(err)
				}
			}
			h, err := newClient(t, testConfig(cl, uint64(40+i))).OpenNoRecovery(ctx, id, testPassword)
			if err != nil {
				t.Fatal(err)
			}
			if tc.interval == 0 {
				// Nothing but adds tells the bookies: the LAC stays where the
				// last add left it however long one waits.
				if lac, err := h.ReadLAC(ctx); err != nil || lac != tc.wantLAC {
					t.Fatalf("LAC read %d, %v; want %d", lac, err, tc.wantLAC)
				}
				return
			}
			waitFor(t, "the explicit LAC", func() bool {
				lac, err := h.ReadLAC(ctx)
				return err == nil && lac == tc.wantLAC
			})
			tctx, cancel := context.WithTimeout(ctx, testhost.Scale(20*time.Second))
			defer cancel()
			var got []Entry
			for e, err := range h.Tail(tctx, 0) {
				if err != nil {
					t.Fatalf("tail after %d entries: %v", len(got), err)
				}
				got = append(got, e)
				if e.EntryID == entries-1 {
					break
				}
			}
			checkEntries(t, id, 0, got)
			if len(got) != entries {
				t.Fatalf("tailed %d entries, want %d", len(got), entries)
			}
		})
	}
}

func TestExplicitLACNeedsV3(t *testing.T) {
	cfg := Config{ZKServers: []string{"127.0.0.1:1"}, ExplicitLACInterval: time.Second, UseV2WireProtocol: true}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "WRITE_LAC") {
		t.Fatalf("explicit LAC over v2: %v", err)
	}
	cfg.UseV2WireProtocol = false
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.ExplicitLACInterval = -time.Second
	if err := cfg.Validate(); err == nil {
		t.Fatal("negative interval accepted")
	}
}
