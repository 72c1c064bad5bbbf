package zkcore

import (
	"keeper/coordination/datatree"
	"keeper/coordination/zkproto"
)

// SessionState is a session as snapshots persist it.
type SessionState struct {
	ID        int64
	TimeoutMs int32
}

// Restore replaces the server's state: a tree (from a snapshot, or a fresh
// one) and the sessions alive in it, at start-up before a log replay, or
// when a learner's state is rebuilt after a TRUNC or a snapshot from its
// leader. Sessions the new state does not have are gone, and so are their
// connections; each remaining session gets a full timeout from now.
func (s *Server) Restore(tree *datatree.Tree, sessions []SessionState, now Now) {
	if s.cfg.EnsembleConfig != nil {
		s.storeEnsembleConfig(tree, now)
	}
	s.tree = tree
	s.view = newView(tree)
	s.lastProposed = tree.LastZxid()
	keep := make(map[int64]bool, len(sessions))
	for _, ss := range sessions {
		keep[ss.ID] = true
		s.sessions.Add(ss.ID, ss.TimeoutMs, now.MonoMs)
	}
	for _, ss := range s.sessions.All() {
		if keep[ss.ID] || s.localSessions[ss.ID] {
			continue
		}
		s.sessions.Remove(ss.ID)
		if c := s.connOf(ss.ID); c != nil {
			delete(s.sessionConn, ss.ID)
			s.closeConn(c)
		}
	}
}

// RenewSessions gives every session a full timeout from now. A server
// calls it when it starts serving after loading its data: the time spent
// loading must not count against sessions restored from disk (Apache
// ZooKeeper starts its session tracker only after the load).
func (s *Server) RenewSessions(now Now) { s.sessions.Renew(now.MonoMs) }

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
//
// That is a standalone server's fate. A member of an ensemble instead
// leaves the service for good (NotServing, whatever SetMode is told
// later): its tree stops at its last durable txn while the others go on
// committing, so reads from it, syncs included, would be stale; every
// connection is closed and new ones are refused, as when it loses its
// leader (Apache ZooKeeper shuts such a server down).
func (s *Server) FailWrites(err error) {
	if s.writeErr != nil {
		return
	}
	s.writeErr = err
	s.log.Error("storage failed: writes stopped", "err", err)
	s.view = newView(s.tree)
	s.lastProposed = s.tree.LastZxid()
	s.proposals, s.outbox = nil, nil
	if s.mode != Standalone {
		s.SetMode(NotServing, 0, Now{}) // sessions no longer expire: the time does not matter
		return
	}
	for _, id := range s.sortedConns() {
		c := s.conns[id]
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
