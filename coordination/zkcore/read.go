package zkcore

import (
	"strings"

	"keeper/coordination/acl"
	"keeper/coordination/datatree"
	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// runRead answers a request from the committed tree. It runs only once
// every earlier write of the connection has been applied.
func (s *Server) runRead(c *conn, e *entry, now Now) {
	body, err := s.read(c, e.op, e.body)
	if err == nil {
		s.metrics.read(e.body, body)
	}
	code := zkproto.CodeOf(err)
	if code == zkproto.CodeSystemError {
		s.log.Error("read failed", "conn", c.id, "op", e.op, "err", err)
	}
	s.finish(e, s.LastZxid(), code, body)
}

// read serves one read-only request; it may register watches.
func (s *Server) read(c *conn, op zkproto.Op, body jute.Record) (jute.Record, error) {
	switch r := body.(type) {
	case *zkproto.ExistsRequest:
		return s.exists(c, r)
	case *zkproto.GetDataRequest:
		return s.getData(c, r.Path, r.Watch)
	case *zkproto.GetChildrenRequest:
		return s.getChildren(c, r.Path, r.Watch, false)
	case *zkproto.GetChildren2Request:
		return s.getChildren(c, r.Path, r.Watch, true)
	case *zkproto.GetACLRequest:
		return s.getACL(c, r.Path)
	case *zkproto.GetAllChildrenNumberRequest:
		if _, err := s.readable(c, r.Path); err != nil {
			return nil, err
		}
		n := s.tree.CountDescendants(r.Path)
		if r.Path == "" {
			n++ // Apache ZooKeeper counts the root's second key, "/", as a descendant of ""
		}
		return &zkproto.GetAllChildrenNumberResponse{TotalNumber: int32(n)}, nil
	case *zkproto.GetEphemeralsRequest:
		return s.getEphemerals(c, r.PrefixPath), nil
	case *zkproto.SyncRequest:
		// Standalone, the tree is always current; in a quorum the driver
		// delays this until the leader's commit point is applied.
		return &zkproto.SyncResponse{Path: r.Path}, nil
	case *zkproto.MultiRequest:
		return s.multiRead(c, r), nil
	case *zkproto.SetWatches:
		s.setWatches(c, r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches, nil, nil)
		return nil, nil
	case *zkproto.SetWatches2:
		s.setWatches(c, r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches,
			r.PersistentWatches, r.PersistentRecursiveWatches)
		return nil, nil
	case *zkproto.AddWatchRequest:
		return s.addWatch(c, r)
	case *zkproto.CheckWatchesRequest:
		if !validWatcherType(r.Type) {
			return nil, zkproto.Errorf(zkproto.CodeMarshallingError, r.Path)
		}
		if !s.watches.Check(r.Path, c.id, r.Type) {
			return nil, zkproto.Errorf(zkproto.CodeNoWatcher, r.Path)
		}
		return nil, nil
	case *zkproto.RemoveWatchesRequest:
		if !validWatcherType(r.Type) {
			return nil, zkproto.Errorf(zkproto.CodeMarshallingError, r.Path)
		}
		if !s.watches.Remove(r.Path, c.id, r.Type) {
			return nil, zkproto.Errorf(zkproto.CodeNoWatcher, r.Path)
		}
		return nil, nil
	}
	switch op {
	case zkproto.OpWhoAmI:
		return s.whoAmI(c), nil
	case zkproto.OpPing:
		// In order, like a read: its zxid is the last applied when it is
		// answered, never older than a reply before it.
		return nil, nil
	}
	return nil, zkproto.ErrUnimplemented
}

// readable returns the node at path if the connection may read it.
func (s *Server) readable(c *conn, path string) (*datatree.Node, error) {
	n := s.tree.Node(path)
	if n == nil {
		return nil, zkproto.Errorf(zkproto.CodeNoNode, path)
	}
	if !s.auth.Check(s.tree.ACL(n), zkproto.PermRead, c.ids) {
		return nil, zkproto.Errorf(zkproto.CodeNoAuth, path)
	}
	return n, nil
}

// exists sets a data watch whether or not the node exists (docs/zookeeper-protocol.md §2.4). It
// checks READ on an existing node, as 3.8.4+ and 3.9.2+ do.
func (s *Server) exists(c *conn, r *zkproto.ExistsRequest) (jute.Record, error) {
	if strings.IndexByte(r.Path, 0) >= 0 {
		return nil, zkproto.Errorf(zkproto.CodeBadArguments, r.Path)
	}
	n := s.tree.Node(r.Path)
	if n != nil && !s.auth.Check(s.tree.ACL(n), zkproto.PermRead, c.ids) {
		return nil, zkproto.Errorf(zkproto.CodeNoAuth, r.Path)
	}
	if r.Watch {
		s.watches.AddData(r.Path, c.id)
	}
	if n == nil {
		return nil, zkproto.Errorf(zkproto.CodeNoNode, r.Path)
	}
	return &zkproto.ExistsResponse{Stat: n.Stat()}, nil
}

func (s *Server) getData(c *conn, path string, watch bool) (jute.Record, error) {
	n, err := s.readable(c, path)
	if err != nil {
		return nil, err
	}
	if watch {
		s.watches.AddData(path, c.id)
	}
	return &zkproto.GetDataResponse{Data: n.Data(), Stat: n.Stat()}, nil
}

func (s *Server) getChildren(c *conn, path string, watch, withStat bool) (jute.Record, error) {
	n, err := s.readable(c, path)
	if err != nil {
		return nil, err
	}
	if watch {
		s.watches.AddChild(path, c.id)
	}
	children := n.Children()
	if children == nil {
		children = []string{}
	}
	if withStat {
		return &zkproto.GetChildren2Response{Children: children, Stat: n.Stat()}, nil
	}
	return &zkproto.GetChildrenResponse{Children: children}, nil
}

// getACL needs READ or ADMIN; without ADMIN, digest ids are masked
// (docs/zookeeper-protocol.md §2.4, CVE-2019-0201).
func (s *Server) getACL(c *conn, path string) (jute.Record, error) {
	n := s.tree.Node(path)
	if n == nil {
		return nil, zkproto.Errorf(zkproto.CodeNoNode, path)
	}
	acls := s.tree.ACL(n)
	if !s.auth.Check(acls, zkproto.PermRead|zkproto.PermAdmin, c.ids) {
		return nil, zkproto.Errorf(zkproto.CodeNoAuth, path)
	}
	if !s.auth.Check(acls, zkproto.PermAdmin, c.ids) {
		acls = acl.MaskDigests(acls)
	}
	return &zkproto.GetACLResponse{ACL: acls, Stat: n.Stat()}, nil
}

// getEphemerals lists the calling session's ephemerals under a plain string
// prefix; an empty or "/" prefix means all of them.
func (s *Server) getEphemerals(c *conn, prefix string) jute.Record {
	all := s.tree.Ephemerals(c.session)
	out := make([]string, 0, len(all))
	prefix = strings.TrimSpace(prefix)
	for _, p := range all {
		if prefix == "" || prefix == "/" || strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return &zkproto.GetEphemeralsResponse{Ephemerals: out}
}

// multiRead runs each read independently; failures become error results.
func (s *Server) multiRead(c *conn, m *zkproto.MultiRequest) jute.Record {
	out := &zkproto.MultiResponse{Results: make([]zkproto.MultiResult, len(m.Ops))}
	for i, sub := range m.Ops {
		var rec jute.Record
		var err error
		switch r := sub.Record.(type) {
		case *zkproto.GetDataRequest:
			rec, err = s.getData(c, r.Path, r.Watch)
		case *zkproto.GetChildrenRequest:
			rec, err = s.getChildren(c, r.Path, r.Watch, false)
		}
		if err != nil {
			code := zkproto.CodeOf(err)
			out.Results[i] = zkproto.MultiResult{Op: zkproto.OpError, Err: code,
				Record: &zkproto.ErrorResponse{Err: code}}
			continue
		}
		out.Results[i] = zkproto.MultiResult{Op: sub.Op, Record: rec}
	}
	return out
}

// whoAmI reports the connection's identities in the order they were added;
// a digest identity shows only its user name (docs/zookeeper-protocol.md §2.4).
func (s *Server) whoAmI(c *conn) jute.Record {
	out := &zkproto.WhoAmIResponse{ClientInfo: make([]zkproto.ClientInfo, 0, len(c.ids))}
	for _, id := range c.ids {
		user := id.ID
		switch id.Scheme {
		case "digest":
			user, _, _ = strings.Cut(id.ID, ":")
		case acl.SchemeSASL:
			user = s.saslUser(id)
		}
		out.ClientInfo = append(out.ClientInfo, zkproto.ClientInfo{AuthScheme: id.Scheme, User: user})
	}
	return out
}

// validWatcherType reports whether t names a WatcherType. Apache ZooKeeper
// fails to decode any other value and answers MarshallingError.
func validWatcherType(t zkproto.WatcherType) bool {
	return t >= zkproto.WatcherChildren && t <= zkproto.WatcherPersistentRecursive
}
