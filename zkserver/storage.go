package zkserver

import (
	"keeper/datatree"
	"keeper/zkproto"
)

// SessionState is a session as snapshots persist it.
type SessionState struct {
	ID        int64
	TimeoutMs int32
}

// Restore replaces the server's state with one loaded from disk: a tree
// (from a snapshot, or a fresh one) and the sessions alive when the
// snapshot was taken. Each session gets a full timeout from now to be
// reattached. The caller then replays the log with Apply. Restore must be
// called before any connection exists.
func (s *Server) Restore(tree *datatree.Tree, sessions []SessionState, now Now) {
	s.tree = tree
	s.view = newView(tree)
	s.lastProposed = tree.LastZxid()
	for _, ss := range sessions {
		s.sessions.Add(ss.ID, ss.TimeoutMs, now.MonoMs)
	}
}

// SnapshotSessions returns the live sessions with the timeouts they were
// created with, as a snapshot stores them, in id order.
func (s *Server) SnapshotSessions() []SessionState {
	all := s.sessions.All()
	out := make([]SessionState, len(all))
	for i, ss := range all {
		out[i] = SessionState{ID: ss.ID, TimeoutMs: ss.CreateTimeoutMs}
	}
	return out
}

// WritesFailed reports the storage error that stopped writes, or nil.
func (s *Server) WritesFailed() error { return s.writeErr }

// FailWrites stops all writes after a storage failure: the log could not
// make txns durable, so none of the txns proposed and not yet applied will
// ever be applied, and nothing more will be proposed. Connections waiting
// for such a write are closed, since its outcome is unknown to the client
// (ConnectionLoss is how clients learn that); later writes are answered
// NotReadOnly, as a read-only server does. Reads keep being served from the
// tree, which holds only durable txns. New sessions cannot be created and
// sessions no longer expire, since both would need a txn.
func (s *Server) FailWrites(err error) {
	if s.writeErr != nil {
		return
	}
	s.writeErr = err
	s.log.Error("storage failed: writes stopped", "err", err)
	s.view = newView(s.tree)
	s.lastProposed = s.tree.LastZxid()
	s.proposals = nil
	for _, c := range s.conns {
		for _, e := range c.queue {
			if e.executed && !e.done && (e.kind == kindWrite || e.kind == kindConnect) {
				s.closeConn(c)
				break
			}
		}
	}
}

// refuseWrite answers a write that arrives after FailWrites.
func (s *Server) refuseWrite(e *entry) {
	s.finish(e, s.LastZxid(), zkproto.CodeNotReadOnly, nil)
}
