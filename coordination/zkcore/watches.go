package zkcore

import (
	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// setWatches re-registers a reconnecting client's watches, first sending
// the events it missed since relativeZxid (docs/zookeeper-protocol.md §3.4). Catch-up events are
// one-shot: a watch that fires now is not registered.
func (s *Server) setWatches(c *conn, relativeZxid int64, data, exist, child, persistent, recursive []string) {
	for _, path := range data {
		n := s.tree.Node(path)
		switch {
		case n == nil:
			s.emit(c, s.eventFrame(zkproto.EventNodeDeleted, path))
		case n.Persisted().Mzxid > relativeZxid:
			s.emit(c, s.eventFrame(zkproto.EventNodeDataChanged, path))
		default:
			s.watches.AddData(path, c.id)
		}
	}
	for _, path := range exist {
		if s.tree.Node(path) != nil {
			s.emit(c, s.eventFrame(zkproto.EventNodeCreated, path))
		} else {
			s.watches.AddData(path, c.id)
		}
	}
	for _, path := range child {
		n := s.tree.Node(path)
		switch {
		case n == nil:
			s.emit(c, s.eventFrame(zkproto.EventNodeDeleted, path))
		case n.Persisted().Pzxid > relativeZxid:
			s.emit(c, s.eventFrame(zkproto.EventNodeChildrenChanged, path))
		default:
			s.watches.AddChild(path, c.id)
		}
	}
	for _, path := range persistent {
		s.watches.AddPersistent(path, c.id)
	}
	for _, path := range recursive {
		s.watches.AddPersistentRecursive(path, c.id)
	}
}

// addWatch registers a persistent or persistent-recursive watch. The node
// need not exist. The reply body ErrorResponse{0} is mandatory (docs/zookeeper-protocol.md §3.5).
func (s *Server) addWatch(c *conn, r *zkproto.AddWatchRequest) (jute.Record, error) {
	switch r.Mode {
	case zkproto.AddWatchPersistent:
		s.watches.AddPersistent(r.Path, c.id)
	case zkproto.AddWatchPersistentRecursive:
		s.watches.AddPersistentRecursive(r.Path, c.id)
	default:
		// Apache ZooKeeper cannot decode an unknown mode.
		return nil, zkproto.Errorf(zkproto.CodeMarshallingError, r.Path)
	}
	return &zkproto.ErrorResponse{Err: zkproto.CodeOK}, nil
}
