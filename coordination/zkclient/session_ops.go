package zkclient

import (
	"context"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// This file holds a Session's requests: each runs on the current
// connection (waiting for one while the session is being reattached), and
// the watch variants hand out a one-shot channel (see Session).

// Create creates a node: see Conn.Create.
func (s *Session) Create(ctx context.Context, path string, data []byte, opts CreateOptions) (string, zkproto.Stat, error) {
	c, err := s.Conn(ctx)
	if err != nil {
		return "", zkproto.Stat{}, err
	}
	return c.Create(ctx, path, data, opts)
}

// Delete deletes a node if its version matches; -1 matches any.
func (s *Session) Delete(ctx context.Context, path string, version int32) error {
	c, err := s.Conn(ctx)
	if err != nil {
		return err
	}
	return c.Delete(ctx, path, version)
}

// Exists returns a node's Stat and true, or false if it does not exist.
func (s *Session) Exists(ctx context.Context, path string) (zkproto.Stat, bool, error) {
	c, err := s.Conn(ctx)
	if err != nil {
		return zkproto.Stat{}, false, err
	}
	return c.Exists(ctx, path, false)
}

// Get returns a node's data and Stat.
func (s *Session) Get(ctx context.Context, path string) ([]byte, zkproto.Stat, error) {
	c, err := s.Conn(ctx)
	if err != nil {
		return nil, zkproto.Stat{}, err
	}
	return c.Get(ctx, path, false)
}

// Set replaces a node's data if its version matches (-1 matches any).
func (s *Session) Set(ctx context.Context, path string, data []byte, version int32) (zkproto.Stat, error) {
	c, err := s.Conn(ctx)
	if err != nil {
		return zkproto.Stat{}, err
	}
	return c.Set(ctx, path, data, version)
}

// Children returns the names of a node's children and its Stat.
func (s *Session) Children(ctx context.Context, path string) ([]string, zkproto.Stat, error) {
	c, err := s.Conn(ctx)
	if err != nil {
		return nil, zkproto.Stat{}, err
	}
	return c.Children(ctx, path, false)
}

// Multi runs write ops atomically: see Conn.Multi.
func (s *Session) Multi(ctx context.Context, ops ...zkproto.MultiOp) ([]zkproto.MultiResult, error) {
	c, err := s.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return c.Multi(ctx, ops...)
}

// GetW is Get leaving a data watch: the channel receives the node's next
// change (or deletion), or the end of the session.
func (s *Session) GetW(ctx context.Context, path string) ([]byte, zkproto.Stat, <-chan zkproto.WatcherEvent, error) {
	rec, ch, err := s.watchCall(ctx, zkproto.OpGetData, &zkproto.GetDataRequest{Path: path, Watch: true},
		watchKey{path: path}, false)
	if err != nil {
		return nil, zkproto.Stat{}, nil, err
	}
	r, ok := rec.(*zkproto.GetDataResponse)
	if !ok {
		return nil, zkproto.Stat{}, nil, unexpected(zkproto.OpGetData, rec)
	}
	return r.Data, r.Stat, ch, nil
}

// ExistsW is Exists leaving a data watch, which fires on the node's
// creation if it does not exist yet.
func (s *Session) ExistsW(ctx context.Context, path string) (zkproto.Stat, bool, <-chan zkproto.WatcherEvent, error) {
	rec, ch, err := s.watchCall(ctx, zkproto.OpExists, &zkproto.ExistsRequest{Path: path, Watch: true},
		watchKey{path: path}, true)
	switch {
	case zkproto.CodeOf(err) == zkproto.CodeNoNode:
		return zkproto.Stat{}, false, ch, nil
	case err != nil:
		return zkproto.Stat{}, false, nil, err
	}
	r, ok := rec.(*zkproto.ExistsResponse)
	if !ok {
		return zkproto.Stat{}, false, nil, unexpected(zkproto.OpExists, rec)
	}
	return r.Stat, true, ch, nil
}

// ChildrenW is Children leaving a child watch: the channel receives the
// next change of the node's children (or its deletion), or the end of the
// session.
func (s *Session) ChildrenW(ctx context.Context, path string) ([]string, zkproto.Stat, <-chan zkproto.WatcherEvent, error) {
	rec, ch, err := s.watchCall(ctx, zkproto.OpGetChildren2, &zkproto.GetChildren2Request{Path: path, Watch: true},
		watchKey{path: path, child: true}, false)
	if err != nil {
		return nil, zkproto.Stat{}, nil, err
	}
	r, ok := rec.(*zkproto.GetChildren2Response)
	if !ok {
		return nil, zkproto.Stat{}, nil, unexpected(zkproto.OpGetChildren2, rec)
	}
	return r.Children, r.Stat, ch, nil
}

// watchCall sends a request that sets a watch and, once the server
// accepted it, arms a one-shot channel for it. The channel is armed in the
// reply's callback, on the connection's reader goroutine, so it is in
// place before any notification that follows the reply is handed out.
// onNoNode arms it on a NoNode reply too (exists). The error is the
// reply's; with onNoNode and NoNode the channel comes with it.
func (s *Session) watchCall(ctx context.Context, op zkproto.Op, req jute.Record, key watchKey, onNoNode bool) (jute.Record, <-chan zkproto.WatcherEvent, error) {
	c, err := s.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !s.reserveWatch() {
		return nil, nil, ErrTooManyWatches
	}
	ch := make(chan zkproto.WatcherEvent, 1)
	done := make(chan Result, 1)
	c.Go(op, req, func(r Result) {
		if r.Err == nil || (onNoNode && zkproto.CodeOf(r.Err) == zkproto.CodeNoNode) {
			s.arm(key, ch)
		} else {
			s.releaseWatch()
		}
		done <- r
	})
	select {
	case r := <-done:
		return r.Record, ch, r.Err
	case <-ctx.Done():
		// The reply's callback still arms or releases the slot; the
		// channel, if armed, fires once and is garbage then.
		return nil, nil, context.Cause(ctx)
	}
}

// reserveWatch takes a slot for a watch about to be armed.
func (s *Session) reserveWatch() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nWatches >= maxSessionWatches {
		return false
	}
	s.nWatches++
	return true
}

// releaseWatch gives back a slot whose watch was not armed.
func (s *Session) releaseWatch() {
	s.mu.Lock()
	s.nWatches--
	s.mu.Unlock()
}

// arm registers ch, whose slot is reserved, under key.
func (s *Session) arm(key watchKey, ch chan zkproto.WatcherEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchers[key] = append(s.watchers[key], ch)
}

// fire hands a notification to the watches it triggers, as the server
// fires its own: creation and data changes fire data watches, deletion
// fires data and child watches, a change of children fires child
// watches. Each channel has room for its one event, so this never blocks.
func (s *Session) fire(ev zkproto.WatcherEvent) {
	var keys []watchKey
	switch ev.Type {
	case zkproto.EventNodeCreated, zkproto.EventNodeDataChanged:
		keys = []watchKey{{path: ev.Path}}
	case zkproto.EventNodeDeleted:
		keys = []watchKey{{path: ev.Path}, {path: ev.Path, child: true}}
	case zkproto.EventNodeChildrenChanged:
		keys = []watchKey{{path: ev.Path, child: true}}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		for _, ch := range s.watchers[k] {
			ch <- ev
			s.nWatches--
		}
		delete(s.watchers, k)
	}
}

// fireAll ends every armed watch with an EventNone of state (the session
// expired, or the Session closed).
func (s *Session) fireAll(state int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, chs := range s.watchers {
		for _, ch := range chs {
			ch <- zkproto.WatcherEvent{Type: zkproto.EventNone, State: state, Path: k.path}
			s.nWatches--
		}
		delete(s.watchers, k)
	}
}
