package peer

import (
	"testing"

	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
	"keeper/internal/metric"
)

// TestAckLatency: a leader times each member's first ACK that covers a
// sampled txn (zxid a multiple of AckLoggingFrequency) still waiting for
// its quorum, once per member, keyed by the member's id; txns not sampled
// and repeated cumulative ACKs record nothing.
func TestAckLatency(t *testing.T) {
	m := NewMetrics(metric.NewRegistry())
	p := &Peer{id: 1, lat: &latencies{m: m}}
	const f = AckLoggingFrequency
	for _, tx := range []struct {
		z    zxid.ID
		time int64
	}{{5 * f, 100}, {5*f + 1, 100}, {6 * f, 200}} {
		p.lat.push(tx.z, tx.time)
	}
	type ack struct {
		from zab.PeerID
		upTo zxid.ID
		now  int64
	}
	for _, a := range []ack{
		{2, 5*f + 1, 150}, // times 5f for member 2: 50
		{2, 5*f + 1, 170}, // the same ACK again: nothing
		{2, 6 * f, 260},   // times 6f only: 60
		{3, 6 * f, 300},   // times both for member 3: 200 and 100
		{1, 5 * f, 90},    // the leader's own, before the txn's time: not recorded
	} {
		p.ackTimed(a.from, a.upTo, zkcore.Now{WallMs: a.now})
	}
	want := map[string]struct{ count, sum int64 }{"2": {2, 110}, "3": {2, 300}}
	got := m.AckLatency.Snapshot()
	if len(got) != len(want) {
		t.Fatalf("ack_latency keys %v, want %v", got, want)
	}
	for _, k := range got {
		if w := want[k.Key]; k.Snapshot.Count != w.count || k.Snapshot.Sum != w.sum {
			t.Errorf("ack_latency %s: %d values summing %d, want %d summing %d", k.Key, k.Snapshot.Count,
				k.Snapshot.Sum, w.count, w.sum)
		}
	}
}
