package zkcore

import (
	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// nextZxid assigns the zxid of a new txn. Standalone servers stay in epoch
// 0; the counter never reuses a value.
func (s *Server) nextZxid() zxid.ID {
	if s.lastProposed < s.tree.LastZxid() {
		s.lastProposed = s.tree.LastZxid()
	}
	s.lastProposed++
	return s.lastProposed
}

// propose queues t for the log (standalone) or for Zab (leader). Its
// effects reach the tree in Apply.
func (s *Server) propose(t *txn.Txn) {
	if s.mode == Standalone {
		s.proposals = append(s.proposals, t)
		return
	}
	s.outbox = append(s.outbox, Out{Txn: t})
}

// prepWrite turns a client's write into a txn. A write that fails its
// checks still becomes a txn, an error txn, and consumes a zxid (docs/zookeeper-protocol.md §2.4).
func (s *Server) prepWrite(c *conn, e *entry, now Now) {
	switch {
	case s.writeErr != nil:
		s.refuseWrite(e)
		return
	case s.mode == ReadOnly && e.op == zkproto.OpCloseSession:
		s.sessions.Remove(c.session)
		delete(s.localSessions, c.session)
		s.finish(e, s.LastZxid(), zkproto.CodeOK, nil)
		e.close = true
		return
	case s.mode == ReadOnly:
		s.refuseWrite(e)
		return
	case e.op == zkproto.OpSync:
		s.queueSync(c, e)
		return
	case e.op == zkproto.OpCloseSession:
		c.closing = true
	}
	if s.mode == Learner {
		s.forward(c, e)
		return
	}
	e.zxid = s.prepare(c.session, c.ids, e.xid, e.op, e.body, e.badBody, now)
	e.executed = true
}

// prepare validates one write of a session and proposes its txn, an error
// txn if it fails; it returns the zxid.
func (s *Server) prepare(sessionID int64, ids []zkproto.ID, cxid int32, op zkproto.Op, body jute.Record,
	bad bool, now Now) zxid.ID {
	z := s.nextZxid()
	p := s.newPrep(sessionID, ids, z, now.WallMs)
	t := &txn.Txn{Header: txn.Header{
		ClientID: sessionID, Cxid: cxid, Zxid: z, Time: now.WallMs, Type: op,
	}}
	var rec jute.Record
	var err error
	switch {
	case bad:
		err = zkproto.ErrMarshallingError
	case op == zkproto.OpMulti:
		rec, err = p.multi(body.(*zkproto.MultiRequest))
	case op == zkproto.OpCloseSession:
		rec = p.closeSession()
		s.sessions.SetClosing(sessionID)
	default:
		rec, err = p.op(op, body)
	}
	if err != nil {
		t.Header.Type = zkproto.OpError
		t.Record = &txn.Error{Err: int32(zkproto.CodeOf(err))}
	} else {
		t.Record = rec
		s.view.add(p.order)
		if p.reconfigZxid != 0 {
			// In flight until applied: Zab learns of it only once the
			// driver proposes it, after this request.
			s.reconfigPending = p.reconfigZxid
		}
	}
	s.propose(t)
	return z
}

// closeSessionTxn proposes the close of a session the server decided to
// end (expiry). Its connection is closed when the txn is applied.
func (s *Server) closeSessionTxn(sessionID int64, now Now) {
	s.sessions.SetClosing(sessionID)
	z := s.nextZxid()
	p := s.newPrep(sessionID, nil, z, now.WallMs)
	rec := p.closeSession()
	s.view.add(p.order)
	s.propose(&txn.Txn{
		Header: txn.Header{ClientID: sessionID, Zxid: z, Time: now.WallMs, Type: zkproto.OpCloseSession},
		Record: rec,
	})
}

// deleteContainerTxn proposes the removal of an empty container or expired
// TTL node. Like Apache ZooKeeper's reaper it is a request of the server's
// own (session 0, no ACL check); if the node changed since it was chosen,
// the result is an error txn.
func (s *Server) deleteContainerTxn(path string, now Now) {
	z := s.nextZxid()
	p := s.newPrep(0, nil, z, now.WallMs)
	t := &txn.Txn{Header: txn.Header{Zxid: z, Time: now.WallMs, Type: zkproto.OpDeleteContainer}}
	node, ok := p.get(path)
	parentPath := zkproto.ParentPath(path)
	parent, parentOK := p.get(parentPath)
	var code zkproto.Code
	switch {
	case !ok || !parentOK:
		code = zkproto.CodeNoNode
	case isNormalEphemeral(node.stat.EphemeralOwner):
		code = zkproto.CodeBadVersion
	case node.numChildren > 0:
		code = zkproto.CodeNotEmpty
	}
	if code != zkproto.CodeOK {
		t.Header.Type = zkproto.OpError
		t.Record = &txn.Error{Err: int32(code)}
	} else {
		p.removeNode(path, parentPath, parent)
		s.view.add(p.order)
		t.Record = &txn.Delete{Path: path}
	}
	s.propose(t)
}
