package peer

import (
	"fmt"

	"keeper/coordination/jute"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
)

// Sizes of REVALIDATE's data (docs/zookeeper-protocol.md §10.3): the learner asks with
// {long sessionId; int timeout}, the leader answers with
// {long sessionId; boolean valid}.
const (
	revalidateAskBytes    = 8 + 4
	revalidateAnswerBytes = 8 + 1
)

// EncodeRevalidate is a learner's REVALIDATE data: long sessionId; int
// timeout.
func EncodeRevalidate(r zkcore.Revalidate) []byte {
	var e jute.Encoder
	e.Long(r.SessionID)
	e.Int(r.TimeoutMs)
	return e.B
}

// DecodeRevalidate reads EncodeRevalidate's bytes.
func DecodeRevalidate(b []byte) (zkcore.Revalidate, error) {
	if len(b) != revalidateAskBytes {
		return zkcore.Revalidate{}, fmt.Errorf("revalidate request of %d bytes, want %d", len(b), revalidateAskBytes)
	}
	d := jute.NewDecoder(b, 0)
	r := zkcore.Revalidate{SessionID: d.Long(), TimeoutMs: d.Int()}
	return r, d.Finish()
}

// EncodeRevalidateAnswer is the leader's REVALIDATE data: long sessionId;
// boolean valid.
func EncodeRevalidateAnswer(sid int64, valid bool) []byte {
	var e jute.Encoder
	e.Long(sid)
	e.Bool(valid)
	return e.B
}

// DecodeRevalidateAnswer reads EncodeRevalidateAnswer's bytes.
func DecodeRevalidateAnswer(b []byte) (sid int64, valid bool, err error) {
	if len(b) != revalidateAnswerBytes {
		return 0, false, fmt.Errorf("revalidate answer of %d bytes, want %d", len(b), revalidateAnswerBytes)
	}
	d := jute.NewDecoder(b, 0)
	sid, valid = d.Long(), d.Bool()
	return sid, valid, d.Finish()
}

// revalidate handles a REVALIDATE: on the leader, a learner's question,
// answered with the core's verdict (which touches a live session); on a
// learner, the leader's verdict, which completes the client's handshake.
// A leader that is not serving yet drops the question: the learner is not
// serving either, or soon will not be, and its client reconnects.
func (p *Peer) revalidate(m zab.Message, now zkcore.Now) error {
	switch p.node.Role() {
	case zab.Leading:
		if !p.node.Serving() {
			return nil
		}
		r, err := DecodeRevalidate(m.Data)
		if err != nil {
			return fmt.Errorf("peer %d: revalidate from %d: %w", p.id, m.From, err)
		}
		valid := p.zk.Revalidate(r.SessionID, r.TimeoutMs, now)
		p.logger.Debug("revalidated session", "learner", m.From, "session", fmt.Sprintf("0x%x", uint64(r.SessionID)), "valid", valid)
		if err := p.node.AnswerRevalidate(m.From, EncodeRevalidateAnswer(r.SessionID, valid)); err != nil {
			return fmt.Errorf("peer %d: revalidate from %d: %w", p.id, m.From, err)
		}
	case zab.Following, zab.Observing:
		if m.From != p.node.Leader() {
			return fmt.Errorf("peer %d: revalidate answer from %d, not the leader", p.id, m.From)
		}
		sid, valid, err := DecodeRevalidateAnswer(m.Data)
		if err != nil {
			return fmt.Errorf("peer %d: revalidate answer from %d: %w", p.id, m.From, err)
		}
		p.zk.Revalidated(sid, valid, now)
	default:
		return nil
	}
	return p.node.Step(m)
}
