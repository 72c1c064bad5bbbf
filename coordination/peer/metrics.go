package peer

import (
	"encoding/binary"
	"strconv"

	"keeper/coordination/txn"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
	"keeper/internal/metric"
)

// Metrics are ZooKeeper's per-txn quorum latencies and the leader's
// REVALIDATE count, under ZooKeeper 3.8's names (docs/observability.md).
// Each latency is, as ZooKeeper's Request.logLatency takes it, the wall
// clock now minus the txn header's time (the leader's wall clock when it
// made the txn), in ms; a negative one (clocks apart) is not recorded.
// Only txns of the broadcast phase count: a sync's txns are old.
type Metrics struct {
	// ProposalLatency: a follower's receipt of a PROPOSAL
	// (proposal_latency).
	ProposalLatency *metric.Summary
	// AckCreationLatency: the txn durable on this member and its ACK made,
	// on a leader and a follower (proposal_ack_creation_latency).
	AckCreationLatency *metric.Summary
	// QuorumAckLatency: a leader's txn acknowledged by a quorum, so
	// committed (quorum_ack_latency).
	QuorumAckLatency *metric.Summary
	// CommitPropagationLatency: a follower's receipt of the COMMIT that
	// covers the txn, or an observer's of its INFORM
	// (commit_propagation_latency).
	CommitPropagationLatency *metric.Summary
	// Revalidations counts the REVALIDATEs a leader received from its
	// learners (revalidate_count).
	Revalidations *metric.Counter
	// LocalWriteCommittedTime and ServerWriteCommittedTime are ZooKeeper's
	// commit-to-apply waits (local_write_committed_time_ms and
	// server_write_committed_time_ms): for each txn of the broadcast
	// phase, the monotonic time from the moment this member learned it was
	// committed (a quorum's ack on a leader, the COMMIT on a follower, the
	// INFORM on an observer) to its apply, which waits for the batch on
	// its way to disk. A txn one of this member's clients is waiting for
	// is local, as is every txn on a leader (ZooKeeper's leader passes
	// its learners' requests through its own CommitProcessor too); a
	// learner's other txns, made for other members' clients, are the
	// server's.
	LocalWriteCommittedTime  *metric.Summary
	ServerWriteCommittedTime *metric.Summary
	// AckLatency, keyed by the acking member's id, is a leader's latency
	// of each ACK of a sampled txn (one in AckLoggingFrequency, by zxid)
	// that arrives while the txn waits for its quorum, the leader's own
	// ACK included (ack_latency). Between keeper servers ACKs are
	// cumulative: an ACK of a later txn acknowledges the sampled one, and
	// is timed for it.
	AckLatency *metric.SummarySet
}

// AckLoggingFrequency is ZooKeeper's default
// zookeeper.leader.ackLoggingFrequency: a leader times the ACKs of the
// txns whose zxid is a multiple of it.
const AckLoggingFrequency = 1000

// NewMetrics registers the peer's metrics in r.
func NewMetrics(r *metric.Registry) *Metrics {
	return &Metrics{
		ProposalLatency:          r.Summary("proposal_latency", true),
		AckCreationLatency:       r.Summary("proposal_ack_creation_latency", true),
		QuorumAckLatency:         r.Summary("quorum_ack_latency", true),
		CommitPropagationLatency: r.Summary("commit_propagation_latency", true),
		Revalidations:            r.Counter("revalidate_count"),
		LocalWriteCommittedTime:  r.Summary("local_write_committed_time_ms", true),
		ServerWriteCommittedTime: r.Summary("server_write_committed_time_ms", true),
		AckLatency:               r.SummarySet("ack_latency", true),
	}
}

// maxTimedTxns bounds the txns proposed or received but not yet committed
// whose times the peer keeps for the commit latencies: a leader proposes
// at most as fast as it commits over time, and beyond this many the oldest
// is forgotten (its commit goes unmeasured) rather than the memory grow.
const maxTimedTxns = 4096

// timedTxn is a txn waiting for its commit, with its header's time.
type timedTxn struct {
	zxid   zxid.ID
	timeMs int64
}

// latencies times txns from the leader's header time to the moments the
// Metrics name. It is the peer's, on the peer's goroutine.
type latencies struct {
	m *Metrics
	// ring holds the uncommitted txns of the broadcast phase in zxid
	// order: head is the oldest, n how many.
	ring    [maxTimedTxns]timedTxn
	head, n int
	seen    zxid.ID // the node's commit point when last looked at
	// marks holds, oldest first, when each advance of the commit point
	// not yet applied was learned: mhead is the oldest, mn how many.
	marks     [maxTimedTxns]commitMark
	mhead, mn int
	// acked is, per member, the greatest zxid its ACKs covered since
	// broadcast began, so that a cumulative ACK times a sampled txn once.
	// It holds at most the ensemble's members.
	acked map[zab.PeerID]zxid.ID
}

// commitMark says the txns after after, up to upTo, were learned
// committed at monoMs (the monotonic clock).
type commitMark struct {
	after, upTo zxid.ID
	monoMs      int64
}

// mark keeps when the commit point moved from after to upTo. When full it
// keeps the older marks: the txns of this one go unmeasured.
func (l *latencies) mark(after, upTo zxid.ID, monoMs int64) {
	if l.mn == maxTimedTxns {
		return
	}
	l.marks[(l.mhead+l.mn)%maxTimedTxns] = commitMark{after: after, upTo: upTo, monoMs: monoMs}
	l.mn++
}

// learnedAt returns when z was learned committed, forgetting the marks
// below it (txns are applied in zxid order); false when no mark covers it.
func (l *latencies) learnedAt(z zxid.ID) (int64, bool) {
	for l.mn > 0 {
		m := l.marks[l.mhead]
		if z <= m.after {
			return 0, false
		}
		if z <= m.upTo {
			return m.monoMs, true
		}
		l.mhead = (l.mhead + 1) % maxTimedTxns
		l.mn--
	}
	return 0, false
}

// SetMetrics has the peer record into m. Without it nothing is measured.
func (p *Peer) SetMetrics(m *Metrics) {
	if m == nil {
		p.lat = nil
		return
	}
	p.lat = &latencies{m: m, seen: p.node.Committed()}
}

// headerTimeMs reads the time field of a txn payload's TxnHeader (clientId
// 8 bytes, cxid 4, zxid 8, then the time); false when the payload is too
// short to hold one.
func headerTimeMs(data []byte) (int64, bool) {
	if len(data) < 28 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(data[20:28])), true
}

// record adds now minus the header time to s, unless it is negative.
func record(s *metric.Summary, now zkcore.Now, timeMs int64) {
	if d := now.WallMs - timeMs; d >= 0 {
		s.Add(d)
	}
}

// push keeps a txn's time until its commit, forgetting the oldest when
// full.
func (l *latencies) push(z zxid.ID, timeMs int64) {
	if l.n == maxTimedTxns {
		l.head = (l.head + 1) % maxTimedTxns
		l.n--
	}
	l.ring[(l.head+l.n)%maxTimedTxns] = timedTxn{zxid: z, timeMs: timeMs}
	l.n++
}

// proposedTimed notes a txn this leader proposed.
func (p *Peer) proposedTimed(z zxid.ID, timeMs int64) {
	if l := p.lat; l != nil && p.node.Serving() {
		l.push(z, timeMs)
	}
}

// receivedTimed measures a message from the leader as it arrives: a
// follower's PROPOSAL, whose time is kept until its COMMIT, and an
// observer's INFORM, which commits its txn.
func (p *Peer) receivedTimed(m zab.Message, now zkcore.Now) {
	l := p.lat
	if l == nil || !p.node.Serving() || m.From != p.node.Leader() {
		return
	}
	switch {
	case m.Type == zab.MsgAck && p.node.Role() == zab.Leading:
		p.ackTimed(m.From, m.Zxid, now)
	case m.Type == zab.MsgProposal && p.node.Role() == zab.Following:
		if t, ok := headerTimeMs(m.Data); ok {
			record(l.m.ProposalLatency, now, t)
			l.push(m.Zxid, t)
		}
	case (m.Type == zab.MsgInform || m.Type == zab.MsgInformAndActivate) && p.node.Role() == zab.Observing:
		if t, ok := headerTimeMs(m.Data); ok {
			record(l.m.CommitPropagationLatency, now, t)
		}
	}
}

// committedTimed measures the txns kept whose commit the node learned
// since the last look: on a leader when a quorum acknowledged them, on a
// follower when the COMMIT arrived. Outside broadcast it forgets them.
func (p *Peer) committedTimed(now zkcore.Now) {
	l := p.lat
	if l == nil {
		return
	}
	c := p.node.Committed()
	if !p.node.Serving() {
		l.head, l.n, l.seen = 0, 0, c
		l.mhead, l.mn = 0, 0
		clear(l.acked)
		return
	}
	if c <= l.seen {
		l.seen = c
		return
	}
	l.mark(l.seen, c, now.MonoMs)
	l.seen = c
	s := l.m.CommitPropagationLatency
	if p.node.Role() == zab.Leading {
		s = l.m.QuorumAckLatency
	}
	for l.n > 0 && l.ring[l.head].zxid <= c {
		record(s, now, l.ring[l.head].timeMs)
		l.head = (l.head + 1) % maxTimedTxns
		l.n--
	}
}

// ackedTimed measures the txns a batch made durable on a leader or a
// follower in broadcast: the moment their ACKs are made.
func (p *Peer) ackedTimed(entries []zab.Entry, now zkcore.Now) {
	l := p.lat
	if l == nil || !p.node.Serving() || p.node.Role() == zab.Observing {
		return
	}
	for _, e := range entries {
		if t, ok := headerTimeMs(e.Data); ok {
			record(l.m.AckCreationLatency, now, t)
		}
	}
	if len(entries) > 0 && p.node.Role() == zab.Leading {
		p.ackTimed(p.id, entries[len(entries)-1].Zxid, now) // the leader's own ACK
	}
}

// ackTimed times, on a leader, member from's ACK up to upTo for each
// sampled txn it covers that still waits for its quorum and that from had
// not acknowledged before (ack_latency).
func (p *Peer) ackTimed(from zab.PeerID, upTo zxid.ID, now zkcore.Now) {
	l := p.lat
	if l.acked == nil {
		l.acked = map[zab.PeerID]zxid.ID{}
	}
	prev := l.acked[from]
	if upTo <= prev {
		return
	}
	l.acked[from] = upTo
	var key string
	for i := range l.n {
		t := l.ring[(l.head+i)%maxTimedTxns]
		if t.zxid > upTo {
			break
		}
		if t.zxid <= prev || uint64(t.zxid)%AckLoggingFrequency != 0 {
			continue
		}
		if key == "" {
			key = strconv.FormatInt(int64(from), 10)
		}
		if d := now.WallMs - t.timeMs; d >= 0 {
			l.m.AckLatency.Add(key, d)
		}
	}
}

// appliedTimed measures a committed txn of the broadcast phase as it is
// about to be applied: the wait since its commit was learned, local when
// this member's core waits for it (or this member leads), the server's
// otherwise. It is called before Apply, which completes the request.
func (p *Peer) appliedTimed(t *txn.Txn, now zkcore.Now) {
	l := p.lat
	if l == nil || !p.node.Serving() {
		return
	}
	learned, ok := l.learnedAt(t.Header.Zxid)
	if !ok {
		return
	}
	d := max(now.MonoMs-learned, 0)
	if p.node.Role() == zab.Leading || p.zk.Awaits(t) {
		l.m.LocalWriteCommittedTime.Add(d)
	} else {
		l.m.ServerWriteCommittedTime.Add(d)
	}
}

// revalidateCounted counts a learner's REVALIDATE on a leader.
func (p *Peer) revalidateCounted() {
	if p.lat != nil && p.node.Role() == zab.Leading {
		p.lat.m.Revalidations.Inc()
	}
}
