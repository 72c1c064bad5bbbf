package quorumnet

import (
	"testing"

	"keeper/coordination/zab"
	"keeper/internal/metric"
)

// TestLinkMetrics: a leader's link to a learner records, for each message
// its writer takes, the messages behind it in the batch, and the wait of
// every MarkerEvery-th message pushed; a learner's link to its leader
// records nothing.
func TestLinkMetrics(t *testing.T) {
	for _, tc := range []struct {
		name      string
		learner   bool
		pushes    []int // messages pushed before each take
		wantSizes int64 // values recorded for learner_handler_qp_size
		wantSum   int64 // their sum
		wantTimes int64 // values recorded for learner_handler_qp_time_ms
	}{
		{name: "leader's link", pushes: []int{3, 1, MarkerEvery}, wantSizes: 3 + 1 + MarkerEvery,
			wantSum: 3 + 0 + MarkerEvery*(MarkerEvery-1)/2, wantTimes: 2},
		{name: "learner's link", learner: true, pushes: []int{3, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := metric.NewRegistry()
			tr := &Transport{cfg: Config{Metrics: NewLinkMetrics(reg)}}
			l := &quorumLink{t: tr, peer: 7, learner: tc.learner, q: newQueue(2 * MarkerEvery), done: make(chan struct{})}
			if !tc.learner {
				l.q.markEvery = MarkerEvery
			}
			for _, n := range tc.pushes {
				for range n {
					l.q.push(zab.Message{Type: zab.MsgProposal})
				}
				batch, wait, ok := l.q.waitMarked(l.done)
				if !ok || len(batch) != n {
					t.Fatalf("took %d messages, want %d", len(batch), n)
				}
				l.recordQueue(len(batch), wait)
			}
			sizes, times := tr.cfg.Metrics.QueueSize.Snapshot(), tr.cfg.Metrics.QueueTime.Snapshot()
			var gotSizes, gotSum, gotTimes int64
			for _, k := range sizes {
				if k.Key != "7" {
					t.Errorf("key %q, want the learner's id 7", k.Key)
				}
				gotSizes, gotSum = gotSizes+k.Snapshot.Count, gotSum+k.Snapshot.Sum
			}
			for _, k := range times {
				gotTimes += k.Snapshot.Count
			}
			if gotSizes != tc.wantSizes || gotSum != tc.wantSum || gotTimes != tc.wantTimes {
				t.Fatalf("qp_size %d values summing %d, qp_time %d values; want %d, %d, %d",
					gotSizes, gotSum, gotTimes, tc.wantSizes, tc.wantSum, tc.wantTimes)
			}
		})
	}
}
