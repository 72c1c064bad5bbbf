package quorumnet

import (
	"strconv"
	"time"

	"keeper/internal/metric"
)

// MarkerEvery is how often a leader's link to a learner times a message's
// wait in its send queue: every MarkerEvery-th message pushed, as
// ZooKeeper's LearnerHandler queues a marker packet every 1000 packets.
const MarkerEvery = 1000

// LinkMetrics are ZooKeeper's figures of a leader's send queue to each
// learner (its LearnerHandler's queuedPackets), keyed by the learner's id
// (docs/observability.md).
type LinkMetrics struct {
	// QueueSize records, for each message the link's writer takes, the
	// messages queued behind it (learner_handler_qp_size). The writer
	// takes the whole queue at once, so those behind a message are the
	// rest of its batch; ZooKeeper's takes one packet at a time and counts
	// the queue left.
	QueueSize *metric.SummarySet
	// QueueTime records, in ms, the wait in the queue of every
	// MarkerEvery-th message, from its push to the moment the writer takes
	// it (learner_handler_qp_time_ms). At most one such message is queued
	// at a time; the turn of one pushed meanwhile passes.
	QueueTime *metric.SummarySet
}

// NewLinkMetrics registers the link figures in r.
func NewLinkMetrics(r *metric.Registry) *LinkMetrics {
	return &LinkMetrics{
		QueueSize: r.SummarySet("learner_handler_qp_size", false),
		QueueTime: r.SummarySet("learner_handler_qp_time_ms", true),
	}
}

// recordQueue records a batch of n messages taken from the queue of a
// leader's link to a learner, and the wait of the marker it held (negative:
// none).
func (l *quorumLink) recordQueue(n int, markerWait time.Duration) {
	m := l.t.cfg.Metrics
	if m == nil || l.learner {
		return
	}
	key := strconv.FormatInt(int64(l.peer), 10)
	for behind := n - 1; behind >= 0; behind-- {
		m.QueueSize.Add(key, int64(behind))
	}
	if markerWait >= 0 {
		m.QueueTime.Add(key, markerWait.Milliseconds())
	}
}
