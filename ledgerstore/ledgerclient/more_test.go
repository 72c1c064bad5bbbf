package ledgerclient

import (
	"slices"
	"sync"
	"testing"
	"time"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient/ledgertest"
	"keeper/ledgerstore/metadata"
)

// TestConcurrentWriters runs several writers of one client at once over
// its shared bookie connections.
func TestConcurrentWriters(t *testing.T) {
	cl := ledgertest.Start(t, 4)
	ctx := testCtx(t)
	c := newClient(t, testConfig(cl, 17))
	const writers, entries = 8, 100
	ids := make([]int64, writers)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := c.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: testPassword})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = w.ID()
			a := newAcks(entries)
			for e := range int64(entries) {
				w.AppendAsync(payload(w.ID(), e), a.callback)
			}
			a.wait(t)
			if len(a.failed) > 0 {
				t.Errorf("ledger %d: %v", w.ID(), a.failed[0])
			}
			if err := w.Close(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	elapsed := time.Since(start)
	t.Logf("%d writers x %d entries on one client in %v (%.0f adds/s)", writers, entries,
		elapsed.Round(time.Millisecond), writers*entries/elapsed.Seconds())
	for _, id := range ids {
		h, err := c.Open(ctx, id, testPassword)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, ctx, h, entries-1)
	}
}

// TestBookieTurnsReadOnly turns a bookie of a writer's ensemble read-only:
// its adds fail, the writer replaces it, and the entries it holds are
// still read from it.
func TestBookieTurnsReadOnly(t *testing.T) {
	cl := ledgertest.Start(t, 4)
	ctx := testCtx(t)
	c := newClient(t, testConfig(cl, 18))
	w, err := c.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 3, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	id := w.ID()
	first := w.Metadata().Segments[0].Bookies
	for e := range int64(100) {
		if e == 50 {
			cl.SetReadOnly(cl.Index(string(first[0])), true)
		}
		if _, err := w.Append(ctx, payload(id, e)); err != nil {
			t.Fatalf("append %d: %v", e, err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	md, err := c.Stat(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Segments) != 2 || slices.Contains(md.LastSegment().Bookies, first[0]) {
		t.Fatalf("segments %s; %s turned read-only at entry 50", segments(md), first[0])
	}
	h, err := c.OpenNoRecovery(ctx, id, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, ctx, h, 99)
}

// TestConvert checks what the driver reads from the store and writes back:
// the stored fields the state machines do not decide survive a rewrite.
func TestConvert(t *testing.T) {
	ens := []ledger.BookieID{"a:1", "b:2", "c:3"}
	open := metadata.NewOpen(ens, 2, 2, bkproto.DigestCRC32C, []byte("pw"))
	open.FormatVersion, open.CToken, open.CTimeMillis, open.StoreCreationTime = 3, 77, 1234, true
	open.Custom = map[string][]byte{"k": []byte("v")}
	legacy := metadata.NewOpen(ens, 3, 3, 0, nil)
	legacy.FormatVersion = 1
	tests := []struct {
		name   string
		stored ledger.Metadata
		change func(*ledger.Metadata)
		want   func(ledger.Metadata) ledger.Metadata
	}{
		{"unchanged", open, func(*ledger.Metadata) {}, func(m ledger.Metadata) ledger.Metadata { return m }},
		{"closed", open, func(m *ledger.Metadata) {
			m.State, m.LastEntryID, m.Length = ledger.StateClosed, 9, 100
		}, func(m ledger.Metadata) ledger.Metadata {
			m.State, m.LastEntryID, m.Length = ledger.StateClosed, 9, 100
			return m
		}},
		{"ensemble change", open, func(m *ledger.Metadata) {
			m.Segments = append(m.Segments, ledger.Segment{FirstEntryID: 5, Bookies: []ledger.BookieID{"a:1", "d:4", "c:3"}})
		}, func(m ledger.Metadata) ledger.Metadata {
			m.Segments = append(m.Segments, ledger.Segment{FirstEntryID: 5, Bookies: []ledger.BookieID{"a:1", "d:4", "c:3"}})
			return m
		}},
		{"legacy in recovery", legacy, func(m *ledger.Metadata) { m.State = ledger.StateInRecovery },
			func(m ledger.Metadata) ledger.Metadata {
				m.State = ledger.StateInRecovery
				return m
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md, err := fromStore(tt.stored, 4)
			if err != nil {
				t.Fatal(err)
			}
			if md.Version != 4 || md.Digest() == 0 || string(md.Custom["k"]) != string(tt.stored.Custom["k"]) ||
				md.CTimeMillis != tt.stored.CTimeMillis || md.CToken != tt.stored.CToken {
				t.Fatalf("fromStore = %+v", md)
			}
			tt.change(&md)
			got := toStore(tt.stored, md)
			want := tt.want(tt.stored.Clone())
			if !got.Equal(want) || got.FormatVersion != want.FormatVersion {
				t.Fatalf("toStore:\n got %+v\nwant %+v", got, want)
			}
			if err := metadata.CheckUpdate(tt.stored, got); err != nil {
				t.Fatal(err)
			}
		})
	}
	bad := open.Clone()
	bad.AckQuorum = 3
	if _, err := fromStore(bad, 0); err == nil {
		t.Fatalf("fromStore accepted Qa > Qw: %+v", bad)
	}
}
