package zkserver

import (
	"keeper/jute"
	"keeper/txn"
	"keeper/zkproto"
	"keeper/zxid"
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

// propose queues t for the log. Its effects reach the tree in Apply.
func (s *Server) propose(t *txn.Txn) {
	s.proposals = append(s.proposals, t)
}

// prepWrite turns a client's write into a txn. A write that fails its
// checks still becomes a txn, an error txn, and consumes a zxid (spec §2.4).
func (s *Server) prepWrite(c *conn, e *entry, now Now) {
	if s.writeErr != nil {
		s.refuseWrite(e)
		return
	}
	z := s.nextZxid()
	p := s.newPrep(c.session, c.ids, z, now.WallMs)
	t := &txn.Txn{Header: txn.Header{
		ClientID: c.session, Cxid: e.xid, Zxid: z, Time: now.WallMs, Type: e.op,
	}}
	var rec jute.Record
	var err error
	switch {
	case e.badBody:
		err = zkproto.ErrMarshallingError
	case e.op == zkproto.OpMulti:
		rec, err = p.multi(e.body.(*zkproto.MultiRequest))
	case e.op == zkproto.OpCloseSession:
		rec = p.closeSession()
		s.sessions.SetClosing(c.session)
		c.closing = true
	default:
		rec, err = p.op(e.op, e.body)
	}
	if err != nil {
		t.Header.Type = zkproto.OpError
		t.Record = &txn.Error{Err: int32(zkproto.CodeOf(err))}
	} else {
		t.Record = rec
		s.view.add(p.order)
	}
	e.executed = true
	e.zxid = z
	s.propose(t)
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
