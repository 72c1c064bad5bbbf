package zkclient

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// watchBook remembers the watches this connection's session set and has
// not seen fire, as the Java client's watch manager does, so that a
// connection reattaching the session elsewhere can set them again
// (Options.Watches, SetWatches). Safe for concurrent use: replies and
// notifications arrive on the reader goroutine, Watches is called from
// any.
type watchBook struct {
	mu sync.Mutex
	// One set per kind the server keeps: data (getData, exists on a
	// node), exist (exists on a missing node: fires on creation), child,
	// and the two persistent kinds of addWatch.
	data, exist, child, persistent, recursive map[string]bool
}

func newWatchBook() *watchBook {
	return &watchBook{data: map[string]bool{}, exist: map[string]bool{}, child: map[string]bool{},
		persistent: map[string]bool{}, recursive: map[string]bool{}}
}

// track wraps the callback of a request that sets or removes a watch, to
// note the change once the server accepted it; other requests pass
// through.
func (w *watchBook) track(op zkproto.Op, req any, cb func(Result)) func(Result) {
	var note func(Result)
	switch r := req.(type) {
	case *zkproto.ExistsRequest:
		if r.Watch {
			note = func(res Result) {
				switch {
				case res.Err == nil:
					w.add(w.data, r.Path)
				case zkproto.CodeOf(res.Err) == zkproto.CodeNoNode:
					w.add(w.exist, r.Path)
				}
			}
		}
	case *zkproto.GetDataRequest:
		if r.Watch {
			note = w.onSuccess(w.data, r.Path)
		}
	case *zkproto.GetChildrenRequest:
		if r.Watch {
			note = w.onSuccess(w.child, r.Path)
		}
	case *zkproto.GetChildren2Request:
		if r.Watch {
			note = w.onSuccess(w.child, r.Path)
		}
	case *zkproto.AddWatchRequest:
		set := w.persistent
		if r.Mode == zkproto.AddWatchPersistentRecursive {
			set = w.recursive
		}
		note = w.onSuccess(set, r.Path)
	case *zkproto.RemoveWatchesRequest:
		note = func(res Result) {
			if res.Err == nil {
				w.removed(r.Path, r.Type)
			}
		}
	}
	if note == nil {
		return cb
	}
	return func(res Result) {
		note(res)
		cb(res)
	}
}

func (w *watchBook) onSuccess(set map[string]bool, path string) func(Result) {
	return func(res Result) {
		if res.Err == nil {
			w.add(set, path)
		}
	}
}

func (w *watchBook) add(set map[string]bool, path string) {
	w.mu.Lock()
	set[path] = true
	w.mu.Unlock()
}

// removed forgets the watches a removeWatches of type t dropped.
func (w *watchBook) removed(path string, t zkproto.WatcherType) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch t {
	case zkproto.WatcherChildren:
		delete(w.child, path)
	case zkproto.WatcherData:
		delete(w.data, path)
		delete(w.exist, path)
	case zkproto.WatcherPersistent:
		delete(w.persistent, path)
	case zkproto.WatcherPersistentRecursive:
		delete(w.recursive, path)
	case zkproto.WatcherAny:
		for _, set := range []map[string]bool{w.data, w.exist, w.child, w.persistent, w.recursive} {
			delete(set, path)
		}
	}
}

// fired forgets the one-shot watches a notification triggered, as the
// server does; persistent watches stay.
func (w *watchBook) fired(ev zkproto.WatcherEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch ev.Type {
	case zkproto.EventNodeCreated, zkproto.EventNodeDataChanged:
		delete(w.data, ev.Path)
		delete(w.exist, ev.Path)
	case zkproto.EventNodeChildrenChanged:
		delete(w.child, ev.Path)
	case zkproto.EventNodeDeleted:
		delete(w.data, ev.Path)
		delete(w.exist, ev.Path)
		delete(w.child, ev.Path)
	}
}

// Watches returns the watches the session holds through this connection
// and has not seen fire, each list sorted, ready for Options.Watches of a
// connection that reattaches the session. RelativeZxid is the last zxid
// this connection saw.
func (c *Conn) Watches() zkproto.SetWatches2 {
	w := c.book
	w.mu.Lock()
	defer w.mu.Unlock()
	sorted := func(set map[string]bool) []string { return slices.Sorted(maps.Keys(set)) }
	return zkproto.SetWatches2{RelativeZxid: c.LastZxid(), DataWatches: sorted(w.data), ExistWatches: sorted(w.exist),
		ChildWatches: sorted(w.child), PersistentWatches: sorted(w.persistent),
		PersistentRecursiveWatches: sorted(w.recursive)}
}

// emptyWatches reports whether ws sets no watch.
func emptyWatches(ws *zkproto.SetWatches2) bool {
	return ws == nil || len(ws.DataWatches)+len(ws.ExistWatches)+len(ws.ChildWatches)+
		len(ws.PersistentWatches)+len(ws.PersistentRecursiveWatches) == 0
}

// restoreWatches sets ws on the session, as the first request of a
// connection that reattached it: the server sets each watch again and at
// once fires those whose node changed after ws.RelativeZxid (those
// notifications reach Events before this returns).
func (c *Conn) restoreWatches(ctx context.Context, ws *zkproto.SetWatches2) error {
	if emptyWatches(ws) {
		return nil
	}
	op, req := c.noteRestored(ws)
	if _, _, err := c.Do(ctx, op, req); err != nil {
		return fmt.Errorf("zkclient: set watches again: %w", err)
	}
	return nil
}

// restoreWatchesAsync is restoreWatches without the wait, for a Session,
// whose goroutine must go on reading Events while the server fires what
// changed: a refusal fails the connection (as a lost one, so that the
// Session tries the next server).
func (c *Conn) restoreWatchesAsync(ws *zkproto.SetWatches2) {
	if emptyWatches(ws) {
		return
	}
	op, req := c.noteRestored(ws)
	c.Go(op, req, func(r Result) {
		if r.Err != nil {
			c.fail(&lostError{addr: c.addr, cause: fmt.Errorf("set watches again: %w", r.Err)})
		}
	})
}

// noteRestored notes ws in the watch book and returns the request that
// sets it on the server. Noted first: a watch the server fires at once
// is forgotten by the notification, which arrives before the reply.
// Without persistent watches the request is SetWatches, which every
// server since 3.4 knows; otherwise SetWatches2 (3.6+).
func (c *Conn) noteRestored(ws *zkproto.SetWatches2) (zkproto.Op, jute.Record) {
	w := c.book
	w.mu.Lock()
	for _, s := range []struct {
		set   map[string]bool
		paths []string
	}{{w.data, ws.DataWatches}, {w.exist, ws.ExistWatches}, {w.child, ws.ChildWatches},
		{w.persistent, ws.PersistentWatches}, {w.recursive, ws.PersistentRecursiveWatches}} {
		for _, p := range s.paths {
			s.set[p] = true
		}
	}
	w.mu.Unlock()
	if len(ws.PersistentWatches)+len(ws.PersistentRecursiveWatches) == 0 {
		return zkproto.OpSetWatches, &zkproto.SetWatches{RelativeZxid: ws.RelativeZxid,
			DataWatches: ws.DataWatches, ExistWatches: ws.ExistWatches, ChildWatches: ws.ChildWatches}
	}
	return zkproto.OpSetWatches2, ws
}
