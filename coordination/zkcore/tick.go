package zkcore

import (
	"fmt"
	"slices"
)

// reaper paces the removal of empty containers and expired TTL nodes.
type reaper struct {
	nextCheckMs int64 // MonoMs of the next check; 0 = at the first tick
}

// Tick lets time pass: sessions whose timeout elapsed are closed and, every
// ContainerCheckMs, empty containers and expired TTL nodes are removed.
// Drivers call it at least every tick (Config.TickMs).
func (s *Server) Tick(now Now) {
	if len(s.held) > 0 {
		s.expireHeld(now)
	}
	if s.mode == ReadOnly {
		s.expireLocal(now)
		return
	}
	if s.writeErr != nil || (s.mode != Standalone && s.mode != Leader) {
		return // expiring a session or reaping a node needs a txn only a leader makes
	}
	for _, sid := range s.sessions.Expire(now.MonoMs) {
		s.log.Info("session expired", "session", sessionHex(sid))
		s.stats.expiredSessions++
		s.metrics.staleSessionsExpired.Inc()
		s.closeSessionTxn(sid, now)
	}
	if s.reaper.nextCheckMs == 0 {
		s.reaper.nextCheckMs = now.MonoMs + s.cfg.ContainerCheckMs
	}
	if now.MonoMs >= s.reaper.nextCheckMs {
		s.reaper.nextCheckMs = now.MonoMs + s.cfg.ContainerCheckMs
		for _, path := range s.reapCandidates(now) {
			s.deleteContainerTxn(path, now)
		}
	}
}

// reapCandidates lists, in path order, the containers and TTL nodes that
// are due for removal (Apache ZooKeeper's ContainerManager rules, docs/zookeeper-protocol.md
// §5.4), at most as many as ContainerMaxPerMinute allows per check.
func (s *Server) reapCandidates(now Now) []string {
	var out []string
	for _, path := range s.tree.Containers() {
		n := s.tree.Node(path)
		if n == nil || n.NumChildren() > 0 {
			continue
		}
		st := n.Persisted()
		neverUsed := st.Cversion == 0
		if !neverUsed || (s.cfg.ContainerMaxNeverUsedMs != 0 && now.WallMs-st.Mtime > s.cfg.ContainerMaxNeverUsedMs) {
			out = append(out, path)
		}
	}
	for _, path := range s.tree.TTLNodes() {
		n := s.tree.Node(path)
		if n == nil || n.NumChildren() > 0 {
			continue
		}
		if ttl := n.TTL(); ttl != 0 && now.WallMs-n.Persisted().Mtime > ttl {
			out = append(out, path)
		}
	}
	slices.Sort(out)
	limit := int(int64(s.cfg.ContainerMaxPerMinute) * s.cfg.ContainerCheckMs / 60000)
	if limit < 1 {
		limit = 1
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// sessionHex formats a session id as Apache ZooKeeper's logs do.
func sessionHex(sid int64) string { return fmt.Sprintf("0x%x", uint64(sid)) }

// expireLocal ends a read-only server's sessions whose timeout passed; they
// own no ephemerals, so no txn is needed. Committed sessions are left to
// the next leader.
func (s *Server) expireLocal(now Now) {
	var due []int64
	for sid := range s.localSessions {
		if sess, ok := s.sessions.Get(sid); !ok || sess.ExpiresAtMs <= now.MonoMs {
			due = append(due, sid)
		}
	}
	slices.Sort(due)
	for _, sid := range due {
		s.sessions.Remove(sid)
		delete(s.localSessions, sid)
		if c := s.connOf(sid); c != nil {
			delete(s.sessionConn, sid)
			s.closeConn(c)
		}
	}
}
