package bookie

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookie/entrystore"
	"keeper/ledgerstore/bookierpc"
)

// connBound is the most one connection may hold under cfg when no
// response is larger than responseBytes (limits.go).
func connBound(cfg Config, responseBytes int64) int64 {
	return cfg.MaxPendingRequestBytesPerConn + int64(cfg.MaxFrameBytes) + requestReserveBytes +
		cfg.MaxUnsentBytesPerConn + responseBytes
}

// budgetBound is the most conns connections may hold together.
func budgetBound(cfg Config, conns int, responseBytes int64) int64 {
	perConn := int64(cfg.MaxFrameBytes) + requestReserveBytes + responseBytes
	return min(cfg.MaxPendingBytes+int64(conns)*perConn, int64(conns)*connBound(cfg, responseBytes))
}

// bigEntry adds entry 0 of ledgerID, of payloadBytes, and returns the
// size of a read response carrying it, with room for the protobuf around.
func bigEntry(t *testing.T, c *bookierpc.Client, ledgerID int64, payloadBytes int) int64 {
	t.Helper()
	body := bkproto.EncodeEntry(ledgerID, 0, -1, int64(payloadBytes), bkproto.DigestCRC32C, nil,
		payload(ledgerID, 0, payloadBytes))
	if err := c.Add(ctx(t), ledgerID, 0, testKey, body, false); err != nil {
		t.Fatalf("add of the big entry: %v", err)
	}
	return int64(len(body)) + 1<<10
}

// flood sends n reads of an entry on a fresh connection that never reads
// a response, and returns it. With v2 the reads are v2 packets (the same
// read, n times: v2 has no transaction id).
func flood(t *testing.T, b *Bookie, ledgerID int64, n int, v2 bool) *rawConn {
	t.Helper()
	a := rawDial(t, b)
	_ = a.nc.SetDeadline(time.Time{})
	for txn := range n {
		if v2 {
			a.writeFrame(v2Read(hdrRead, ledgerID, 0, nil))
			continue
		}
		a.writeRequest(&bkproto.Request{Header: bkproto.NewHeader(bkproto.OperationType_READ_ENTRY, uint64(txn+1)),
			ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(ledgerID), EntryId: proto.Int64(0)}})
	}
	return a
}

// protocols runs test once for each protocol's attackers.
func protocols(t *testing.T, test func(t *testing.T, v2 bool)) {
	t.Run("v3", func(t *testing.T) { test(t, false) })
	t.Run("v2", func(t *testing.T) { test(t, true) })
}

// serverConn returns the bookie's side of the client connection nc, nil
// once the bookie has let it go.
func serverConn(b *Bookie, nc net.Conn) *conn {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	for c := range b.conns {
		if c.nc.RemoteAddr().String() == nc.LocalAddr().String() {
			return c
		}
	}
	return nil
}

// connCount is how many connections the bookie serves.
func connCount(b *Bookie) int {
	b.connMu.Lock()
	defer b.connMu.Unlock()
	return len(b.conns)
}

// heldBytes is what all connections hold now, and the most they held.
func heldBytes(b *Bookie) (now, peak int64) { return b.mem.used.Load(), b.mem.peak.Load() }

// connPeakBytes is the most c has held.
func connPeakBytes(c *conn) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peakBytes
}

// TestBoundedMemoryUnderUnreadResponses reproduces the reported attack
// at test scale: clients pipeline reads of a 1 MiB entry and never read
// a response. What the bookie holds stays within the stated bounds, per
// connection and in all, while a healthy client on another connection
// still gets its adds and reads answered; once the attackers leave, all
// of it is released. The attackers speak v3, and then v2.
func TestBoundedMemoryUnderUnreadResponses(t *testing.T) {
	protocols(t, testBoundedMemoryUnderUnreadResponses)
}

func testBoundedMemoryUnderUnreadResponses(t *testing.T, v2 bool) {
	const (
		attackers    = 3
		readsEach    = 150
		payloadBytes = 1 << 20
	)
	e := newEnv(t, false)
	e.tweak = func(c *Config) {
		c.MaxFrameBytes = 2 << 20
		c.MaxPendingBytes = 8 << 20 // below what the attackers could hold at their per-connection bound
		c.StuckClientTimeout = time.Hour
	}
	b := e.start()
	cfg := b.cfg
	healthy := dial(t, b)
	respBytes := bigEntry(t, healthy, 1, payloadBytes)
	perConn, total := connBound(cfg, respBytes), budgetBound(cfg, attackers+1, respBytes)
	check := func(when string) {
		t.Helper()
		if now, peak := heldBytes(b); peak > total || now > total {
			t.Fatalf("%s: the connections hold %d bytes (at most %d so far), above the bound %d", when, now, peak, total)
		}
	}

	var attacks []*rawConn
	for range attackers {
		attacks = append(attacks, flood(t, b, 1, readsEach, v2))
	}
	// The attack is in full swing once the budget is spent: the bookie has
	// stopped reading the attackers' requests.
	eventually(t, "the attackers to spend the budget", func() bool {
		check("during the attack")
		now, _ := heldBytes(b)
		return now >= cfg.MaxPendingBytes
	})

	// A healthy client still gets answers: adds, small reads, and a read
	// of the big entry.
	addEntries(t, healthy, 2, 0, 50)
	for entryID := int64(0); entryID < 50; entryID += 7 {
		checkEntry(t, healthy, 2, entryID)
	}
	rr, err := healthy.Read(ctx(t), 1, 0)
	if err != nil || len(rr.GetBody()) < payloadBytes {
		t.Fatalf("read of the big entry during the attack: %d bytes, %v", len(rr.GetBody()), err)
	}
	check("after the healthy client's requests")
	for i, a := range attacks {
		c := serverConn(b, a.nc)
		if c == nil {
			t.Fatalf("attacker %d was disconnected; this test is about holding it within bounds", i)
		}
		if peak := connPeakBytes(c); peak > perConn {
			t.Fatalf("attacker %d's connection held %d bytes, above its bound %d", i, peak, perConn)
		}
	}
	_, peak := heldBytes(b)
	t.Logf("peak %d bytes held for %d connections (bound %d; unbounded, %d attackers would queue %d MiB)",
		peak, attackers+1, total, attackers, attackers*readsEach*payloadBytes>>20)

	// The attackers leave: what they held goes with them.
	for _, a := range attacks {
		_ = a.nc.Close()
	}
	eventually(t, "the attackers' memory to be released", func() bool {
		now, _ := heldBytes(b)
		return connCount(b) == 1 && now == 0
	})
	checkEntry(t, healthy, 2, 49)
}

// TestStuckClientClosed: a client that takes no responses for
// StuckClientTimeout is closed and what it held released, and the bookie
// goes on serving others, whichever protocol the client speaks.
func TestStuckClientClosed(t *testing.T) { protocols(t, testStuckClientClosed) }

func testStuckClientClosed(t *testing.T, v2 bool) {
	e := newEnv(t, false)
	e.tweak = func(c *Config) { c.StuckClientTimeout = 200 * time.Millisecond }
	b := e.start()
	healthy := dial(t, b)
	bigEntry(t, healthy, 1, 1<<20)
	// More than the kernel's socket buffers and the bookie's bound take.
	a := flood(t, b, 1, 64, v2)
	eventually(t, "the bookie to take the attacker's requests", func() bool { return serverConn(b, a.nc) != nil })
	eventually(t, "the stuck client to be closed and its memory released", func() bool {
		now, _ := heldBytes(b)
		return serverConn(b, a.nc) == nil && now == 0
	})
	if _, peak := heldBytes(b); peak == 0 {
		t.Fatal("the attacker held nothing: it was not stuck")
	}
	addEntries(t, healthy, 2, 0, 10)
	checkEntry(t, healthy, 2, 9)
}

// TestPendingReadsPerConnBounded: with maxPendingReadRequestsPerThread=4 a
// connection has at most four reads in progress, and reads nothing past
// them: a READ_LAC behind eight long polls is answered only once one of
// the last four has been, not first as it is under the default bound.
func TestPendingReadsPerConnBounded(t *testing.T) {
	for _, limit := range []int{4, 0} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			e := newEnv(t, false)
			e.tweak = func(c *Config) { c.MaxPendingReadsPerConn = limit }
			b := e.start()
			writer := dial(t, b)
			addEntries(t, writer, 3, 0, 3) // bookie-known LAC 1
			r := rawDial(t, b)
			txn := uint64(0)
			poll := func(prev int64) {
				txn++
				r.writeRequest(&bkproto.Request{Header: bkproto.NewHeader(bkproto.OperationType_READ_ENTRY, txn),
					ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(3), EntryId: proto.Int64(-1),
						PreviousLAC: proto.Int64(prev), TimeOut: proto.Int64(60_000)}})
			}
			for range 4 {
				poll(1)
			}
			for range 4 {
				poll(2)
			}
			txn++
			r.writeRequest(&bkproto.Request{Header: bkproto.NewHeader(bkproto.OperationType_READ_LAC, txn),
				ReadLacRequest: &bkproto.ReadLacRequest{LedgerId: proto.Int64(3)}})
			answered := func(n int) []uint64 {
				var txns []uint64
				for range n {
					resp, err := r.readResponse()
					if err != nil {
						t.Fatal(err)
					}
					txns = append(txns, resp.GetHeader().GetTxnId())
				}
				return txns
			}
			if limit == 0 { // the default bound: everything is read, READ_LAC answered at once
				if got := answered(1); got[0] != 9 {
					t.Fatalf("first answer %v, want READ_LAC (9)", got)
				}
				return
			}
			eventually(t, "four long polls to park", func() bool { return b.lacs.count.Load() == 4 })
			addEntries(t, writer, 3, 3, 4) // LAC 2 wakes the first four
			got := answered(4)
			slices.Sort(got)
			if !slices.Equal(got, []uint64{1, 2, 3, 4}) {
				t.Fatalf("answers %v, want the first four long polls", got)
			}
			eventually(t, "the next four long polls to park", func() bool { return b.lacs.count.Load() == 4 })
			addEntries(t, writer, 3, 4, 5) // LAC 3 wakes them, and READ_LAC runs once one is written
			got = answered(5)
			if got[0] == 9 {
				t.Fatalf("answers %v: READ_LAC (9) before any of the long polls ahead of it", got)
			}
			slices.Sort(got)
			if !slices.Equal(got, []uint64{5, 6, 7, 8, 9}) {
				t.Fatalf("answers %v, want the last four long polls and READ_LAC", got)
			}
		})
	}
}

// TestLimitSettings: how the connection limits resolve, and that a bad
// one is refused naming its key.
func TestLimitSettings(t *testing.T) {
	counts := []struct{ set, want int }{{0, DefaultMaxPendingRequestsPerConn}, {-1, math.MaxInt}, {7, 7}}
	for _, tt := range counts {
		d := Config{MaxPendingAddsPerConn: tt.set, MaxPendingReadsPerConn: tt.set}.withDefaults()
		if d.MaxPendingAddsPerConn != tt.want || d.MaxPendingReadsPerConn != tt.want {
			t.Errorf("count %d resolves to %d/%d, want %d", tt.set, d.MaxPendingAddsPerConn, d.MaxPendingReadsPerConn, tt.want)
		}
	}
	base := Config{JournalDirs: []string{"/j"}, LedgerDirs: []string{"/l"}}
	bad := []struct {
		key string
		set func(*Config)
	}{
		{"maxPendingRequestBytesPerConnection", func(c *Config) { c.MaxPendingRequestBytesPerConn = -1 }},
		{"maxUnsentResponseBytesPerConnection", func(c *Config) { c.MaxUnsentBytesPerConn = -1 }},
		{"maxPendingConnectionBytes", func(c *Config) { c.MaxPendingBytes = -1 }},
		{"waitTimeoutOnResponseBackpressureMs", func(c *Config) { c.StuckClientTimeout = -time.Second }},
	}
	for _, tt := range bad {
		c := base
		tt.set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.key) {
			t.Errorf("%s: %v", tt.key, err)
		}
	}
	for _, v := range []string{"0", "-1", "x"} {
		_, _, err := ConfigFromProperties(map[string]string{"waitTimeoutOnResponseBackpressureMs": v})
		if err == nil || !strings.Contains(err.Error(), "waitTimeoutOnResponseBackpressureMs") {
			t.Errorf("waitTimeoutOnResponseBackpressureMs=%s: %v", v, err)
		}
	}
}

// BenchmarkPipelinedAdds measures the add path through one connection
// that keeps 256 adds in flight, so that group commit answers many at
// once: the path whose throughput the connection limits must keep.
func BenchmarkPipelinedAdds(b *testing.B) {
	for _, size := range []int{100, 4 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			dir := b.TempDir()
			bk, err := New(Config{
				ListenAddr:    "127.0.0.1:0",
				JournalDirs:   []string{dir + "/journal"},
				LedgerDirs:    []string{dir + "/ledgers"},
				FlushInterval: time.Hour, DiskCheckInterval: time.Hour, GCWaitTime: time.Hour,
				MinorCompactionInterval: time.Hour, MajorCompactionInterval: 2 * time.Hour,
				DiskUsage: func(dir string) (entrystore.DirUsage, error) {
					return entrystore.DirUsage{Dir: dir, UsedBytes: 0, TotalBytes: 1 << 40}, nil
				},
			})
			if err != nil {
				b.Fatal(err)
			}
			if err := bk.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer bk.Close()
			c, err := bookierpc.Dial(context.Background(), bk.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			const window = 256
			inflight := make(chan (<-chan bookierpc.Result), window)
			done := make(chan error, 1)
			go func() {
				var first error
				for ch := range inflight {
					res := <-ch
					if err := bookierpc.StatusErr(res.Resp, res.Err); err != nil && first == nil {
						first = err
					}
				}
				done <- first
			}()
			data := payload(1, 0, size)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := range b.N {
				ledgerID, entryID := int64(1+i%64), int64(i/64)
				body := bkproto.EncodeEntry(ledgerID, entryID, entryID-1, 0, bkproto.DigestCRC32C, nil, data)
				inflight <- c.Go(bookierpc.AddRequest(ledgerID, entryID, testKey, body, false))
			}
			close(inflight)
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
}
