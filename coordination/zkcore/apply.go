package zkcore

import (
	"keeper/coordination/datatree"
	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
)

// Apply applies one committed, durable txn. Txns must arrive in zxid order.
// The notifications it triggers are queued before its reply, and the reply
// before anything the connection's later requests produce.
func (s *Server) Apply(t *txn.Txn, now Now) {
	res, changes := s.tree.ApplyAppend(t, s.changes)
	s.view.applied(t.Header.Zxid)
	if t.Header.Zxid > s.lastProposed {
		s.lastProposed = t.Header.Zxid // a txn another server prepared
	}
	s.stats.txns++
	sid := t.Header.ClientID
	switch t.Header.Type {
	case zkproto.OpCreateSession:
		if _, ok := s.sessions.Get(sid); !ok {
			s.sessions.Add(sid, t.Record.(*txn.CreateSession).TimeoutMs, now.MonoMs)
		}
	case zkproto.OpCloseSession:
		s.sessions.Remove(sid)
	case zkproto.OpReconfig:
		if t.Header.Zxid >= s.reconfigPending {
			s.reconfigPending = 0
		}
		if sd, ok := t.Record.(*txn.SetData); ok {
			if int64(t.Header.Zxid) > s.cfg.EnsembleConfigVersion {
				// What Restore writes into a tree from now on.
				s.cfg.EnsembleConfig, s.cfg.EnsembleConfigVersion = sd.Data, int64(t.Header.Zxid)
			} else {
				// An older reconfiguration, replayed from the log at start
				// or met in a sync, behind a configuration the member has
				// already activated (saved to its files, heard of while
				// looking): the node goes on showing the active one, as
				// ZooKeeper rewrites it from its active configuration
				// after loading its database.
				s.storeEnsembleConfig(s.tree, now)
			}
		}
	}
	s.metrics.applied(t, now)
	s.notify(changes)
	clear(changes) // keep no paths or ACL lists alive
	if cap(changes) <= maxKeptChanges {
		s.changes = changes[:0]
	}
	s.complete(t, res, now)
	if len(s.held) > 0 {
		s.releaseCaughtUp(now)
	}
}

// maxKeptChanges bounds the buffer Apply keeps between txns: a large
// multi's is let go.
const maxKeptChanges = 64

// notify queues a notification for every connection watching a change.
// As in Apache ZooKeeper 3.8.4 and 3.9.2 (CVE-2024-23944), a connection
// without READ on the node gets no event, though its watch is consumed.
func (s *Server) notify(changes []datatree.Change) {
	for _, ch := range changes {
		fired := s.watches.Trigger(ch.Type, ch.Path)
		s.metrics.fired(ch.Type, len(fired))
		for _, id := range fired {
			c, ok := s.conns[id]
			if !ok || !s.auth.Check(ch.ACL, zkproto.PermRead, c.ids) {
				continue
			}
			frame := s.eventFrame(ch.Type, ch.Path)
			s.emit(c, frame)
			s.metrics.response(frame, true)
		}
	}
}

// eventFrame encodes a notification. Its zxid is -1, as Apache ZooKeeper
// 3.4–3.8 send; no client reads it (docs/zookeeper-protocol.md §3.3).
func (s *Server) eventFrame(typ zkproto.EventType, path string) []byte {
	return s.replyFrame(zkproto.XidNotification, -1, zkproto.CodeOK,
		&zkproto.WatcherEvent{Type: typ, State: zkproto.StateSyncConnected, Path: path})
}

// complete delivers the reply of the request that produced t, if its
// connection is still here.
func (s *Server) complete(t *txn.Txn, res datatree.Result, now Now) {
	sid := t.Header.ClientID
	switch t.Header.Type {
	case zkproto.OpCreateSession:
		if c := s.sessionCreated(sid, t.Header.Zxid); c != nil {
			s.pump(c, now)
		}
		return
	case zkproto.OpCloseSession:
		c := s.connOf(sid)
		if c == nil {
			return
		}
		if len(c.queue) > 0 && c.queue[0].revalidating {
			// A reattach waiting for the leader's verdict: this is it.
			s.Revalidated(sid, false, now)
			return
		}
		delete(s.sessionConn, sid)
		if e := pendingWrite(c, t); e != nil {
			s.finish(e, t.Header.Zxid, zkproto.CodeOK, nil)
			e.close = true
			s.pump(c, now)
		} else {
			s.closeConn(c) // expired: the server ends the connection
		}
		return
	}
	c := s.connOf(sid)
	if c == nil {
		return
	}
	if e := pendingWrite(c, t); e != nil {
		s.writeReply(e, t, res)
		s.pump(c, now)
	}
}

// pendingWrite returns the write of c that produced t: its first write not
// yet completed (syncs aside), if that write got t's zxid — or, for a write
// forwarded to the leader, t's cxid.
func pendingWrite(c *conn, t *txn.Txn) *entry {
	for _, e := range c.queue {
		if e.kind != kindWrite || !e.executed || e.done || e.op == zkproto.OpSync {
			continue
		}
		if e.zxid == t.Header.Zxid || (e.zxid == 0 && e.xid == t.Header.Cxid) {
			return e
		}
		return nil
	}
	return nil
}

// writeReply builds the reply of a write from the result of applying it.
func (s *Server) writeReply(e *entry, t *txn.Txn, res datatree.Result) {
	z := t.Header.Zxid
	if et, ok := t.Record.(*txn.Error); ok {
		s.finish(e, z, zkproto.Code(et.Err), nil)
		return
	}
	if res.Err != nil && e.op != zkproto.OpMulti {
		s.log.Error("applying a prepared txn failed", "zxid", z, "op", e.op, "err", res.Err)
		s.finish(e, z, zkproto.CodeOf(res.Err), nil)
		return
	}
	var body jute.Record
	switch e.op {
	case zkproto.OpCreate:
		body = &zkproto.CreateResponse{Path: res.Path}
	case zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL:
		body = &zkproto.Create2Response{Path: res.Path, Stat: res.Stat}
	case zkproto.OpSetData:
		body = &zkproto.SetDataResponse{Stat: res.Stat}
	case zkproto.OpSetACL:
		body = &zkproto.SetACLResponse{Stat: res.Stat}
	case zkproto.OpReconfig:
		// The new configuration and the node's stat, as ZooKeeper answers
		// (its active configuration, which the commit just made this one).
		body = &zkproto.GetDataResponse{Data: t.Record.(*txn.SetData).Data, Stat: res.Stat}
	case zkproto.OpMulti:
		body = multiReply(e.body.(*zkproto.MultiRequest), t.Record.(*txn.Multi), res)
	}
	s.finish(e, z, zkproto.CodeOK, body)
}

// multiReply builds a multi's results. A failed multi answers every op with
// an error result; its reply header still says OK (docs/zookeeper-protocol.md §2.3).
// keeper's leader writes an error sub-txn for every op of a failed multi,
// but Apache ZooKeeper's leader writes the real sub-txns of the ops before
// the failing one: those answer OK, and ops after the first error sub-txn
// RuntimeInconsistency, as datatree applies them.
func multiReply(req *zkproto.MultiRequest, m *txn.Multi, res datatree.Result) *zkproto.MultiResponse {
	out := &zkproto.MultiResponse{Results: make([]zkproto.MultiResult, len(m.Ops))}
	failed := false
	for _, op := range m.Ops {
		if op.Type == zkproto.OpError {
			failed = true
		}
	}
	postFailed := false
	for i, op := range m.Ops {
		r := &out.Results[i]
		if failed {
			code := zkproto.CodeOK
			if postFailed {
				code = zkproto.CodeRuntimeInconsistency
			}
			if et, ok := op.Record.(*txn.Error); ok && op.Type == zkproto.OpError {
				code, postFailed = zkproto.Code(et.Err), true
			}
			*r = zkproto.MultiResult{Op: zkproto.OpError, Err: code, Record: &zkproto.ErrorResponse{Err: code}}
			continue
		}
		var sub datatree.Result
		if i < len(res.Multi) {
			sub = res.Multi[i]
		}
		switch req.Ops[i].Op {
		case zkproto.OpCreate:
			*r = zkproto.MultiResult{Op: zkproto.OpCreate, Record: &zkproto.CreateResponse{Path: sub.Path}}
		case zkproto.OpCreate2, zkproto.OpCreateTTL, zkproto.OpCreateContainer:
			*r = zkproto.MultiResult{Op: zkproto.OpCreate2, Record: &zkproto.Create2Response{Path: sub.Path, Stat: sub.Stat}}
		case zkproto.OpSetData:
			*r = zkproto.MultiResult{Op: zkproto.OpSetData, Record: &zkproto.SetDataResponse{Stat: sub.Stat}}
		default: // delete, check: no body
			*r = zkproto.MultiResult{Op: req.Ops[i].Op}
		}
	}
	return out
}

// Awaits reports whether one of this server's connections waits for t: the
// handshake that asked for its session, or the write (made here, or
// forwarded to the leader) that produced it. A txn another server's client
// made, or one no client waits for (an expiry), is not awaited.
func (s *Server) Awaits(t *txn.Txn) bool {
	c := s.connOf(t.Header.ClientID)
	if c == nil {
		return false
	}
	if t.Header.Type == zkproto.OpCreateSession {
		if len(c.queue) == 0 {
			return false
		}
		e := c.queue[0]
		return e.kind == kindConnect && !e.done && !e.revalidating && (e.zxid == t.Header.Zxid || e.zxid == 0)
	}
	return pendingWrite(c, t) != nil
}
