package ledgerclient

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// v2Config is testConfig speaking BookKeeper's v2 protocol to bookies.
func v2Config(cl *ledgertest.Cluster, seed uint64) Config {
	cfg := testConfig(cl, seed)
	cfg.UseV2WireProtocol = true
	return cfg
}

// TestV2 runs the client's end-to-end scenarios with useV2WireProtocol:
// write, close and read; a LAC read of an open ledger (piggybacked, as v2
// has no READ_LAC); recovery fencing a writer that is still adding, with
// either client on either protocol; and a tail (plain reads standing in
// for long polls).
func TestV2(t *testing.T) {
	cl := ledgertest.Start(t, 4)
	v2 := newClient(t, v2Config(cl, 21))
	t.Run("round trip", func(t *testing.T) {
		for _, opts := range []CreateOptions{
			{Ensemble: 3, WriteQuorum: 3, AckQuorum: 2, CustomMetadata: map[string][]byte{"app": []byte("3-3-2")}},
			{Ensemble: 4, WriteQuorum: 2, AckQuorum: 2, CustomMetadata: map[string][]byte{"app": []byte("4-2-2")}},
		} {
			opts.Password = testPassword
			roundTrip(t, v2, opts, 300)
		}
		v2.pool.mu.Lock()
		defer v2.pool.mu.Unlock()
		for b, bc := range v2.pool.conns {
			if cl := bc.cl.Load(); cl == nil || !cl.V2() {
				t.Fatalf("connection to %s is not v2", b)
			}
		}
	})
	t.Run("read open ledger", func(t *testing.T) {
		readOpenLedger(t, v2, newClient(t, v2Config(cl, 22)))
	})
	t.Run("recovery fences writer", func(t *testing.T) {
		recoveryFencesWriter(t, v2, newClient(t, v2Config(cl, 23)))
	})
	t.Run("v2 writer, v3 recovery", func(t *testing.T) {
		recoveryFencesWriter(t, v2, newClient(t, testConfig(cl, 24)))
	})
	t.Run("v3 writer, v2 recovery", func(t *testing.T) {
		recoveryFencesWriter(t, newClient(t, testConfig(cl, 25)), newClient(t, v2Config(cl, 26)))
	})
	t.Run("tail", func(t *testing.T) {
		tail(t, v2, newClient(t, v2Config(cl, 27)))
	})
}

// TestV2BatchReadFromBookie asks a real bookie for batches of a closed
// ledger's entries over v2 (BATCH_READ_ENTRY, bookierpc.BatchRead): each
// batch starts at the entry asked for, holds at most maxCount entries in
// at most maxSize bytes (the first entry always), and every entry passes
// its digest check.
func TestV2BatchReadFromBookie(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	ctx := testCtx(t)
	c := newClient(t, v2Config(cl, 28))
	w, err := c.Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 3, AckQuorum: 2, Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	id := w.ID()
	const total = 40
	for e := range int64(total) {
		if _, err := w.Append(ctx, payload(id, e)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	md := w.Metadata()
	var macKey []byte
	if md.Digest() == bkproto.DigestHMAC {
		k := bkproto.MacKey(md.Password)
		macKey = k[:]
	}
	conn, err := c.pool.conn(ctx, md.LastSegment().Bookies[1])
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		first     int64
		maxCount  int32
		maxSize   int64
		wantCount int
	}{
		{"count bound", 5, 10, 1 << 20, 10},
		{"past the end", 35, 10, 1 << 20, 5},
		{"size bound keeps the first entry", 7, 10, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(id), EntryId: proto.Int64(tc.first)}}
			resp, err := conn.BatchRead(ctx, req, tc.maxCount, tc.maxSize)
			if err != nil || bkproto.ResponseStatus(resp) != bkproto.StatusCode_EOK {
				t.Fatalf("batch read: %v, %v", resp, err)
			}
			entries, err := bkproto.V2BatchEntries(resp.GetReadResponse().GetBody())
			if err != nil || len(entries) != tc.wantCount {
				t.Fatalf("%d entries (%v), want %d", len(entries), err, tc.wantCount)
			}
			for i, body := range entries {
				e, err := bkproto.DecodeEntry(body, md.Digest(), macKey, id, tc.first+int64(i))
				if err != nil || !bytes.Equal(e.Payload, payload(id, tc.first+int64(i))) {
					t.Fatalf("entry %d of the batch: %v", i, err)
				}
			}
		})
	}
}

// TestV2RecoveryInBatches recovers, over v2, an E = Qw ledger whose writer
// went quiet: recovery reads forward in batches (BATCH_READ_ENTRY), checks
// every entry's digest, re-adds and closes at the last entry the writer
// wrote, and the ledger reads back whole.
func TestV2RecoveryInBatches(t *testing.T) {
	cl := ledgertest.Start(t, 3)
	ctx := testCtx(t)
	w, err := newClient(t, v2Config(cl, 29)).Create(ctx, CreateOptions{Ensemble: 3, WriteQuorum: 3, AckQuorum: 2,
		Password: testPassword})
	if err != nil {
		t.Fatal(err)
	}
	id := w.ID()
	const total = 300
	a := newAcks(total)
	for e := range int64(total) {
		w.AppendAsync(payload(id, e), a.callback)
	}
	a.wait(t)
	if len(a.failed) > 0 {
		t.Fatal(a.failed[0])
	}
	rcfg := v2Config(cl, 30)
	rcfg.RecoveryReadBatchSize = 32
	h, err := newClient(t, rcfg).Open(ctx, id, testPassword)
	if err != nil {
		t.Fatal(err)
	}
	if md := h.Metadata(); md.State != ledger.StateClosed || md.LastEntryID != total-1 || md.Length != totalLength(id, total-1) {
		t.Fatalf("recovered %s, last %d, length %d; want closed at %d", md.State, md.LastEntryID, md.Length, total-1)
	}
	readAll(t, ctx, h, total-1)
}
