package peer

import (
	"testing"

	"keeper/coordination/txn"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/internal/metric"
)

func TestHeaderTimeMs(t *testing.T) {
	payload := txn.Marshal(&txn.Txn{Header: txn.Header{ClientID: -1, Cxid: 7, Zxid: 0x100000002, Time: 1_700_000_123_456,
		Type: zkproto.OpDelete}, Record: &txn.Delete{Path: "/a"}})
	tests := []struct {
		name string
		data []byte
		want int64
		ok   bool
	}{
		{name: "txn", data: payload, want: 1_700_000_123_456, ok: true},
		{name: "header only", data: payload[:28], want: 1_700_000_123_456, ok: true},
		{name: "short", data: payload[:27]},
		{name: "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := headerTimeMs(tc.data)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("headerTimeMs = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// FuzzHeaderTimeMs checks the fixed-offset read against the txn decoder.
func FuzzHeaderTimeMs(f *testing.F) {
	f.Add(txn.Marshal(&txn.Txn{Header: txn.Header{Time: 5, Type: zkproto.OpDelete}, Record: &txn.Delete{Path: "/x"}}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := headerTimeMs(b)
		if tx, err := txn.Unmarshal(b, 1<<20); err == nil && (!ok || got != tx.Header.Time) {
			t.Fatalf("headerTimeMs = %d, %v; the decoder reads %d", got, ok, tx.Header.Time)
		}
		if ok != (len(b) >= 28) {
			t.Fatalf("ok = %v for %d bytes", ok, len(b))
		}
	})
}

func TestRecordDropsNegativeLatency(t *testing.T) {
	tests := []struct {
		name          string
		wallMs, hdrMs int64
		count, sum    int64
	}{
		{name: "later", wallMs: 1050, hdrMs: 1000, count: 1, sum: 50},
		{name: "same ms", wallMs: 1000, hdrMs: 1000, count: 1, sum: 0},
		{name: "leader's clock ahead", wallMs: 990, hdrMs: 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := metric.NewSummary(true)
			record(s, zkcore.Now{WallMs: tc.wallMs}, tc.hdrMs)
			if got := s.Snapshot(); got.Count != tc.count || got.Sum != tc.sum {
				t.Fatalf("count %d sum %d, want %d %d", got.Count, got.Sum, tc.count, tc.sum)
			}
		})
	}
}

func TestTimedRingForgetsOldest(t *testing.T) {
	var l latencies
	for i := range maxTimedTxns + 3 {
		l.push(zxid.Make(1, uint32(i)), int64(i))
	}
	if l.n != maxTimedTxns || l.ring[l.head].zxid != zxid.Make(1, 3) {
		t.Fatalf("%d kept, oldest %s; want %d from %s", l.n, l.ring[l.head].zxid, maxTimedTxns, zxid.Make(1, 3))
	}
}

// A commit mark covers the txns after its lower bound up to its upper one;
// the marks below an applied txn are forgotten, and a txn no mark covers
// (committed before the member served, or past a full ring) is unmeasured.
func TestCommitMarks(t *testing.T) {
	z := func(c uint32) zxid.ID { return zxid.Make(2, c) }
	tests := []struct {
		name   string
		marks  []commitMark
		applys []zxid.ID
		want   []int64 // -1: unmeasured
		left   int
	}{
		{name: "one mark, several txns", marks: []commitMark{{after: z(0), upTo: z(3), monoMs: 10}},
			applys: []zxid.ID{z(1), z(2), z(3)}, want: []int64{10, 10, 10}, left: 1},
		{name: "each mark its own txns", marks: []commitMark{{after: z(0), upTo: z(1), monoMs: 10}, {after: z(1), upTo: z(3), monoMs: 25}},
			applys: []zxid.ID{z(1), z(2), z(3)}, want: []int64{10, 25, 25}, left: 1},
		{name: "txn before the first mark", marks: []commitMark{{after: z(5), upTo: z(6), monoMs: 7}},
			applys: []zxid.ID{z(4), z(6)}, want: []int64{-1, 7}, left: 1},
		{name: "txn past every mark", marks: []commitMark{{after: z(0), upTo: z(1), monoMs: 7}},
			applys: []zxid.ID{z(2)}, want: []int64{-1}, left: 0},
		{name: "new epoch", marks: []commitMark{{after: z(9), upTo: zxid.Make(3, 1), monoMs: 4}},
			applys: []zxid.ID{zxid.Make(3, 1)}, want: []int64{4}, left: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l latencies
			for _, m := range tc.marks {
				l.mark(m.after, m.upTo, m.monoMs)
			}
			for i, a := range tc.applys {
				got, ok := l.learnedAt(a)
				if !ok {
					got = -1
				}
				if got != tc.want[i] {
					t.Fatalf("learnedAt(%s) = %d, want %d", a, got, tc.want[i])
				}
			}
			if l.mn != tc.left {
				t.Fatalf("%d marks left, want %d", l.mn, tc.left)
			}
		})
	}
}

func TestCommitMarksFull(t *testing.T) {
	var l latencies
	for i := range maxTimedTxns + 1 {
		l.mark(zxid.Make(1, uint32(i)), zxid.Make(1, uint32(i+1)), int64(i))
	}
	if got, ok := l.learnedAt(zxid.Make(1, 1)); !ok || got != 0 {
		t.Fatalf("oldest: %d, %v; want 0, true", got, ok)
	}
	if _, ok := l.learnedAt(zxid.Make(1, maxTimedTxns+1)); ok {
		t.Fatal("a mark past a full ring was kept")
	}
}

// An ensemble's members measure each txn once where ZooKeeper does: the
// leader its quorum's ack, every voter its own ack, a follower the
// PROPOSAL and the COMMIT; the leader counts a learner's REVALIDATE.
func TestPeerQuorumLatencies(t *testing.T) {
	regs := map[zab.PeerID]*metric.Registry{}
	e := newEnsembleWith(t, 3, nil, func(id zab.PeerID, p *Peer) {
		regs[id] = metric.NewRegistry()
		p.SetMetrics(NewMetrics(regs[id]))
	})
	e.until(2000, "serving", func() bool { _, ok := e.serving(); return ok })
	leader, _ := e.serving()
	var fs []zab.PeerID
	for _, id := range e.ids {
		if id != leader {
			fs = append(fs, id)
		}
	}
	e.connect(fs[0], 1)
	e.request(fs[0], 1, 1, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/a", ACL: zkproto.OpenACLUnsafe})
	e.until(500, "created", func() bool { _, ok := e.reply(fs[0], 1, 1); return ok })
	sid := e.handshake(fs[0], 1).SessionID
	e.reattach(fs[1], 2, sid)
	e.until(500, "re-established", func() bool { return len(e.frames[fs[1]][2]) > 0 })
	count := func(id zab.PeerID, name string) int64 {
		m, ok := regs[id].Lookup(name)
		if !ok {
			t.Fatalf("%s not registered", name)
		}
		if c, ok := m.(*metric.Counter); ok {
			return c.Load()
		}
		return m.(*metric.Summary).Snapshot().Count
	}
	// Two txns: the session and the node. A follower's COMMIT may still
	// be on its way.
	want := map[zab.PeerID]map[string]int64{
		leader: {"proposal_latency": 0, "proposal_ack_creation_latency": 2, "quorum_ack_latency": 2,
			"commit_propagation_latency": 0, "revalidate_count": 1,
			"local_write_committed_time_ms": 2, "server_write_committed_time_ms": 0},
		// fs[0]'s client made both txns; fs[1] applies them for it.
		fs[0]: {"proposal_latency": 2, "proposal_ack_creation_latency": 2, "quorum_ack_latency": 0,
			"commit_propagation_latency": 2, "revalidate_count": 0,
			"local_write_committed_time_ms": 2, "server_write_committed_time_ms": 0},
		fs[1]: {"proposal_latency": 2, "proposal_ack_creation_latency": 2, "quorum_ack_latency": 0,
			"commit_propagation_latency": 2, "revalidate_count": 0,
			"local_write_committed_time_ms": 0, "server_write_committed_time_ms": 2},
	}
	e.until(500, "every figure counted", func() bool {
		for id, names := range want {
			for name, n := range names {
				if count(id, name) != n {
					return false
				}
			}
		}
		return true
	})
}

// BenchmarkLatencyBookkeeping is the per-txn cost the latencies add on a
// follower: the PROPOSAL's time read and kept, the ACK's and the COMMIT's
// latency recorded.
func BenchmarkLatencyBookkeeping(b *testing.B) {
	m := NewMetrics(metric.NewRegistry())
	l := &latencies{m: m}
	data := txn.Marshal(&txn.Txn{Header: txn.Header{Time: 1000, Type: zkproto.OpDelete}, Record: &txn.Delete{Path: "/a"}})
	now := zkcore.Now{WallMs: 1005}
	b.ReportAllocs()
	for i := range b.N {
		t, _ := headerTimeMs(data)
		record(m.ProposalLatency, now, t)
		l.push(zxid.Make(1, uint32(i)), t)
		record(m.AckCreationLatency, now, t)
		record(m.CommitPropagationLatency, now, l.ring[l.head].timeMs)
		l.head = (l.head + 1) % maxTimedTxns
		l.n--
	}
}
