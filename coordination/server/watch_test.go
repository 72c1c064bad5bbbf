package server

import (
	"bytes"
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/jute"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/internal/cutproxy"
)

// Tests of docs/zookeeper-protocol.md §3: which watches fire on which change, one-shot against
// persistent, ordering against replies, and restoring watches after a
// reconnect.

// ev builds the event a server sends: state is always SyncConnected.
func ev(typ zkproto.EventType, path string) zkproto.WatcherEvent {
	return zkproto.WatcherEvent{Type: typ, State: zkproto.StateSyncConnected, Path: path}
}

// watchStep is a request the watcher or the writer sends in a scenario;
// the scenario fails unless it gets want (OK when zero).
type watchStep struct {
	op   zkproto.Op
	body jute.Record
	want zkproto.Code
}

func getW(path string) watchStep {
	return watchStep{op: zkproto.OpGetData, body: &zkproto.GetDataRequest{Path: path, Watch: true}}
}
func existsW(path string) watchStep {
	return watchStep{op: zkproto.OpExists, body: &zkproto.ExistsRequest{Path: path, Watch: true}}
}
func childrenW(path string) watchStep {
	return watchStep{op: zkproto.OpGetChildren2, body: &zkproto.GetChildren2Request{Path: path, Watch: true}}
}
func addWatch(path string, mode int32) watchStep {
	return watchStep{op: zkproto.OpAddWatch, body: &zkproto.AddWatchRequest{Path: path, Mode: mode}}
}
func create(path string) watchStep {
	return watchStep{op: zkproto.OpCreate, body: &zkproto.CreateRequest{Path: path, ACL: zkproto.OpenACLUnsafe}}
}
func setData(path, data string) watchStep {
	return watchStep{op: zkproto.OpSetData, body: &zkproto.SetDataRequest{Path: path, Data: []byte(data), Version: -1}}
}
func del(path string) watchStep {
	return watchStep{op: zkproto.OpDelete, body: &zkproto.DeleteRequest{Path: path, Version: -1}}
}
func setACL(path string) watchStep {
	return watchStep{op: zkproto.OpSetACL, body: &zkproto.SetACLRequest{Path: path, ACL: zkproto.OpenACLUnsafe, Version: -1}}
}
func fails(s watchStep, code zkproto.Code) watchStep { s.want = code; return s }

func (st watchStep) run(t *testing.T, c *rawClient) {
	t.Helper()
	if code := c.code(st.op, st.body); code != st.want {
		t.Fatalf("%v %+v: %v, want %v", st.op, st.body, code, st.want)
	}
}

// TestWatchTable checks the table of docs/zookeeper-protocol.md §3.2 from a watcher connection
// while another connection makes the changes. After the changes the
// watcher does a round trip, so every notification they triggered has
// arrived; it must have received exactly want.
func TestWatchTable(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		w := rawSession(t, srv.Addr)
		x := rawSession(t, srv.Addr)
		const (
			created  = zkproto.EventNodeCreated
			deleted  = zkproto.EventNodeDeleted
			changed  = zkproto.EventNodeDataChanged
			children = zkproto.EventNodeChildrenChanged
		)
		tests := []struct {
			name   string
			setup  []watchStep // by the writer, before the watches
			watch  []watchStep // by the watcher
			change []watchStep // by the writer
			want   []zkproto.WatcherEvent
		}{
			{
				name:  "data watch is one-shot",
				setup: []watchStep{create("/d1")}, watch: []watchStep{getW("/d1")},
				change: []watchStep{setData("/d1", "a"), setData("/d1", "b")},
				want:   []zkproto.WatcherEvent{ev(changed, "/d1")},
			},
			{
				name:  "data watch sees delete",
				setup: []watchStep{create("/d2")}, watch: []watchStep{getW("/d2")},
				change: []watchStep{del("/d2")},
				want:   []zkproto.WatcherEvent{ev(deleted, "/d2")},
			},
			{
				name:   "exists watch on a missing node sees create",
				watch:  []watchStep{fails(existsW("/d3"), zkproto.CodeNoNode)},
				change: []watchStep{create("/d3"), setData("/d3", "x")},
				want:   []zkproto.WatcherEvent{ev(created, "/d3")},
			},
			{
				name:  "exists watch on an existing node sees setData",
				setup: []watchStep{create("/d4")}, watch: []watchStep{existsW("/d4")},
				change: []watchStep{setData("/d4", "x")},
				want:   []zkproto.WatcherEvent{ev(changed, "/d4")},
			},
			{
				name:   "getData on a missing node sets no watch",
				watch:  []watchStep{fails(getW("/d5"), zkproto.CodeNoNode), fails(childrenW("/d5"), zkproto.CodeNoNode)},
				change: []watchStep{create("/d5"), create("/d5/c")},
				want:   nil,
			},
			{
				name:  "child watch is one-shot",
				setup: []watchStep{create("/c1")}, watch: []watchStep{childrenW("/c1")},
				change: []watchStep{create("/c1/a"), create("/c1/b")},
				want:   []zkproto.WatcherEvent{ev(children, "/c1")},
			},
			{
				name:  "child watch sees a child deleted",
				setup: []watchStep{create("/c2"), create("/c2/a")}, watch: []watchStep{childrenW("/c2")},
				change: []watchStep{del("/c2/a")},
				want:   []zkproto.WatcherEvent{ev(children, "/c2")},
			},
			{
				name:  "child watch on a deleted node gets NodeDeleted",
				setup: []watchStep{create("/c3")}, watch: []watchStep{childrenW("/c3")},
				change: []watchStep{del("/c3")},
				want:   []zkproto.WatcherEvent{ev(deleted, "/c3")},
			},
			{
				name:  "data and child watch on a deleted node: one event",
				setup: []watchStep{create("/c4")}, watch: []watchStep{getW("/c4"), childrenW("/c4")},
				change: []watchStep{del("/c4"), create("/c4")},
				want:   []zkproto.WatcherEvent{ev(deleted, "/c4")},
			},
			{
				name:  "setData does not fire a child watch",
				setup: []watchStep{create("/c5")}, watch: []watchStep{childrenW("/c5")},
				change: []watchStep{setData("/c5", "x")},
				want:   nil,
			},
			{
				name:  "a child create does not fire the parent's data watch",
				setup: []watchStep{create("/c6")}, watch: []watchStep{getW("/c6")},
				change: []watchStep{create("/c6/a"), del("/c6/a")},
				want:   nil,
			},
			{
				name:  "setACL fires nothing",
				setup: []watchStep{create("/c7")}, watch: []watchStep{getW("/c7"), childrenW("/c7")},
				change: []watchStep{setACL("/c7")},
				want:   nil,
			},
			{
				name:  "persistent watch (docs/zookeeper-protocol.md §3.2 consequences)",
				watch: []watchStep{addWatch("/p", zkproto.AddWatchPersistent)},
				change: []watchStep{create("/p"), create("/p/c"), setData("/p/c", "x"), create("/p/c/g"),
					setData("/p", "x"), del("/p/c/g"), del("/p/c"), del("/p"), create("/p")},
				want: []zkproto.WatcherEvent{ev(created, "/p"), ev(children, "/p"), ev(changed, "/p"),
					ev(children, "/p"), ev(deleted, "/p"), ev(created, "/p")},
			},
			{
				name:  "recursive watch never sees NodeChildrenChanged",
				watch: []watchStep{addWatch("/r", zkproto.AddWatchPersistentRecursive)},
				change: []watchStep{create("/r"), create("/r/c"), setData("/r/c", "x"), create("/r/c/d"),
					del("/r/c/d"), del("/r/c"), create("/rx"), del("/r")},
				want: []zkproto.WatcherEvent{ev(created, "/r"), ev(created, "/r/c"), ev(changed, "/r/c"),
					ev(created, "/r/c/d"), ev(deleted, "/r/c/d"), ev(deleted, "/r/c"), ev(deleted, "/r")},
			},
			{
				name:   "recursive and standard watch on one node: one event",
				setup:  []watchStep{create("/r2")},
				watch:  []watchStep{addWatch("/r2", zkproto.AddWatchPersistentRecursive), getW("/r2"), existsW("/r2")},
				change: []watchStep{setData("/r2", "x")},
				want:   []zkproto.WatcherEvent{ev(changed, "/r2")},
			},
			{
				name:   "persistent watch on a missing node's parent",
				setup:  []watchStep{create("/p2")},
				watch:  []watchStep{addWatch("/p2", zkproto.AddWatchPersistent), addWatch("/p2/none", zkproto.AddWatchPersistent)},
				change: []watchStep{create("/p2/none"), del("/p2/none")},
				want: []zkproto.WatcherEvent{ev(created, "/p2/none"), ev(children, "/p2"),
					ev(deleted, "/p2/none"), ev(children, "/p2")},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				for _, st := range tt.setup {
					st.run(t, x)
				}
				for _, st := range tt.watch {
					st.run(t, w)
				}
				for _, st := range tt.change {
					st.run(t, x)
				}
				got := w.events()
				if !slices.Equal(got, tt.want) {
					t.Errorf("events\n got %v\nwant %v", got, tt.want)
				}
				if evs := x.events(); len(evs) != 0 {
					t.Errorf("the writer, which set no watch, got %v", evs)
				}
			})
		}
	})
}

// TestNotificationBeforeReply checks docs/zookeeper-protocol.md §3.6 on the writer's own
// connection: the event a write triggers comes before the write's reply,
// and is framed exactly as docs/zookeeper-protocol.md's example.
func TestNotificationBeforeReply(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		w := rawSession(t, srv.Addr)
		w.mustCreate("/foo", 0)
		w.mustOK(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/foo", Watch: true})
		xid := w.send(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/foo", Data: []byte("x"), Version: -1})
		first, err := w.readFrame()
		if err != nil {
			t.Fatal(err)
		}
		want := []byte{
			0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,
			0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 4, '/', 'f', 'o', 'o',
		}
		if !bytes.Equal(first, want) {
			t.Fatalf("first frame after setData\n got % x\nwant % x (NodeDataChanged /foo, then the reply)", first, want)
		}
		reply, evs := w.await(xid, zkproto.OpSetData)
		if reply.Header.Err != zkproto.CodeOK || len(evs) != 0 {
			t.Fatalf("reply %+v, extra events %v", reply.Header, evs)
		}

		// The same holds for a multi and for a delete's two events: all of
		// them precede the reply.
		w.mustCreate("/foo/c", 0)
		w.mustOK(zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: "/foo", Watch: true})
		w.mustOK(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/foo/c", Watch: true})
		f, evs := w.call(zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/foo/c", Version: -1})
		wantEvs := []zkproto.WatcherEvent{ev(zkproto.EventNodeDeleted, "/foo/c"), ev(zkproto.EventNodeChildrenChanged, "/foo")}
		if f.Header.Err != zkproto.CodeOK || !slices.Equal(evs, wantEvs) {
			t.Errorf("delete: %v, events before the reply %v, want %v", f.Header.Err, evs, wantEvs)
		}
	})
}

// TestNotificationBeforeLaterRead checks the other half of §3.6: once a
// write is applied, a later reply on a watcher's connection comes after
// the notification, so a client never reads data newer than its events.
func TestNotificationBeforeLaterRead(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		w := rawSession(t, srv.Addr)
		x := rawSession(t, srv.Addr)
		x.mustCreate("/n", 0)
		for i := range 50 {
			w.mustOK(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/n", Watch: true})
			x.mustOK(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/n", Data: []byte{byte(i)}, Version: -1})
			f, evs := w.call(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/n"})
			got := f.Body.(*zkproto.GetDataResponse).Data
			if !bytes.Equal(got, []byte{byte(i)}) || !slices.Equal(evs, []zkproto.WatcherEvent{ev(zkproto.EventNodeDataChanged, "/n")}) {
				t.Fatalf("round %d: read %v after events %v", i, got, evs)
			}
		}
	})
}

// TestAddCheckRemoveWatches covers addWatch, checkWatches and
// removeWatches (docs/zookeeper-protocol.md §3.5), none of which go-zk v1.0.4 can send.
func TestAddCheckRemoveWatches(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		w := rawSession(t, srv.Addr)
		x := rawSession(t, srv.Addr)
		x.mustCreate("/a", 0)

		// addWatch on a missing node succeeds, and its reply carries the
		// mandatory ErrorResponse{0} body.
		f, _ := w.call(zkproto.OpAddWatch, &zkproto.AddWatchRequest{Path: "/missing", Mode: zkproto.AddWatchPersistent})
		if f.Header.Err != zkproto.CodeOK || f.Len != zkproto.ReplyHeaderLen+4 {
			t.Fatalf("addWatch reply %+v, %d bytes; want OK with a 4-byte body", f.Header, f.Len)
		}
		if b, ok := f.Body.(*zkproto.ErrorResponse); !ok || b.Err != zkproto.CodeOK {
			t.Fatalf("addWatch body %+v", f.Body)
		}

		check := func(path string, wt zkproto.WatcherType) zkproto.Code {
			return w.code(zkproto.OpCheckWatches, &zkproto.CheckWatchesRequest{Path: path, Type: wt})
		}
		remove := func(path string, wt zkproto.WatcherType) zkproto.Code {
			return w.code(zkproto.OpRemoveWatches, &zkproto.RemoveWatchesRequest{Path: path, Type: wt})
		}
		const (
			ok        = zkproto.CodeOK
			noWatcher = zkproto.CodeNoWatcher
		)
		type probe struct {
			path string
			wt   zkproto.WatcherType
			want zkproto.Code
		}
		expect := func(step string, probes ...probe) {
			t.Helper()
			for _, p := range probes {
				if got := check(p.path, p.wt); got != p.want {
					t.Errorf("%s: checkWatches(%s, %d) = %v, want %v", step, p.path, p.wt, got, p.want)
				}
			}
		}
		expect("no watches",
			probe{"/a", zkproto.WatcherData, noWatcher}, probe{"/a", zkproto.WatcherChildren, noWatcher},
			probe{"/a", zkproto.WatcherAny, noWatcher}, probe{"/missing", zkproto.WatcherAny, ok})

		w.mustOK(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/a", Watch: true})
		expect("data watch on /a",
			probe{"/a", zkproto.WatcherData, ok}, probe{"/a", zkproto.WatcherAny, ok},
			probe{"/a", zkproto.WatcherChildren, noWatcher})
		w.mustOK(zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: "/a", Watch: true})
		expect("child watch on /a", probe{"/a", zkproto.WatcherChildren, ok})

		// Removing the data watch leaves the child watch, and the removed one
		// no longer fires.
		if got := remove("/a", zkproto.WatcherData); got != ok {
			t.Fatalf("removeWatches data: %v", got)
		}
		if got := remove("/a", zkproto.WatcherData); got != noWatcher {
			t.Errorf("removing it twice: %v, want NoWatcher", got)
		}
		expect("after removing the data watch",
			probe{"/a", zkproto.WatcherData, noWatcher}, probe{"/a", zkproto.WatcherChildren, ok})
		x.mustOK(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/a", Version: -1})
		if evs := w.events(); len(evs) != 0 {
			t.Errorf("removed data watch fired: %v", evs)
		}

		// The types for persistent watches, as docs/zookeeper-protocol.md §3.5 defines them.
		srv.keeperOnly(t, "types 4 and 5 give MarshallingError, and a persistent watch passes for a Data watch")
		expect("no persistent watch on /a", probe{"/a", zkproto.WatcherPersistent, noWatcher})
		expect("persistent on /missing",
			probe{"/missing", zkproto.WatcherPersistent, ok}, probe{"/missing", zkproto.WatcherAny, ok},
			probe{"/missing", zkproto.WatcherPersistentRecursive, noWatcher}, probe{"/missing", zkproto.WatcherData, noWatcher},
			probe{"/missing", zkproto.WatcherChildren, noWatcher})

		// Any removes every kind; the persistent watch goes with Persistent.
		w.mustOK(zkproto.OpAddWatch, &zkproto.AddWatchRequest{Path: "/a", Mode: zkproto.AddWatchPersistentRecursive})
		expect("recursive on /a", probe{"/a", zkproto.WatcherPersistentRecursive, ok}, probe{"/a", zkproto.WatcherPersistent, noWatcher})
		if got := remove("/a", zkproto.WatcherAny); got != ok {
			t.Fatalf("removeWatches any: %v", got)
		}
		expect("after removing any on /a",
			probe{"/a", zkproto.WatcherAny, noWatcher}, probe{"/a", zkproto.WatcherChildren, noWatcher},
			probe{"/a", zkproto.WatcherPersistentRecursive, noWatcher})
		if got := remove("/missing", zkproto.WatcherPersistent); got != ok {
			t.Fatalf("removeWatches persistent: %v", got)
		}
		x.mustCreate("/a/c", 0)
		x.mustCreate("/missing", 0)
		if evs := w.events(); len(evs) != 0 {
			t.Errorf("removed watches fired: %v", evs)
		}
	})
}

// TestSetWatchesCatchUp sends setWatches and setWatches2 by hand
// (docs/zookeeper-protocol.md §3.4): events missed since relativeZxid arrive before the reply, and
// only the watches that did not fire are registered.
func TestSetWatchesCatchUp(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		x := rawSession(t, srv.Addr)
		for _, p := range []string{"/changed", "/gone", "/quiet", "/kids", "/quietkids", "/gonekids", "/exists"} {
			x.mustCreate(p, 0)
		}
		rel := lastZxid(t, x)
		x.mustOK(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/changed", Version: -1})
		x.mustOK(zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/gone", Version: -1})
		x.mustCreate("/kids/c", 0)
		x.mustOK(zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/gonekids", Version: -1})

		w := rawSession(t, srv.Addr)
		w.sendXid(zkproto.XidSetWatches, zkproto.OpSetWatches, &zkproto.SetWatches{
			RelativeZxid: rel,
			DataWatches:  []string{"/changed", "/gone", "/quiet"},
			ExistWatches: []string{"/exists", "/absent"},
			ChildWatches: []string{"/kids", "/quietkids", "/gonekids"},
		})
		f, evs := w.await(zkproto.XidSetWatches, zkproto.OpSetWatches)
		if f.Header.Err != zkproto.CodeOK || f.Len != zkproto.ReplyHeaderLen {
			t.Fatalf("setWatches reply %+v (%d bytes), want OK, header only", f.Header, f.Len)
		}
		want := []zkproto.WatcherEvent{
			ev(zkproto.EventNodeDataChanged, "/changed"),
			ev(zkproto.EventNodeDeleted, "/gone"),
			ev(zkproto.EventNodeCreated, "/exists"),
			ev(zkproto.EventNodeChildrenChanged, "/kids"),
			ev(zkproto.EventNodeDeleted, "/gonekids"),
		}
		sortEvents(evs)
		sortEvents(want)
		if !slices.Equal(evs, want) {
			t.Errorf("catch-up events before the reply\n got %v\nwant %v", evs, want)
		}

		// The quiet watches are registered; the ones that fired are consumed.
		for _, p := range []string{"/changed", "/quiet", "/exists"} {
			x.mustOK(zkproto.OpSetData, &zkproto.SetDataRequest{Path: p, Version: -1})
		}
		x.mustCreate("/absent", 0)
		x.mustCreate("/quietkids/c", 0)
		x.mustCreate("/kids/d", 0)
		got := w.events()
		want = []zkproto.WatcherEvent{
			ev(zkproto.EventNodeDataChanged, "/quiet"),
			ev(zkproto.EventNodeCreated, "/absent"),
			ev(zkproto.EventNodeChildrenChanged, "/quietkids"),
		}
		if !slices.Equal(got, want) {
			t.Errorf("after catch-up\n got %v\nwant %v", got, want)
		}

		// setWatches2 registers persistent and recursive watches without
		// catch-up events.
		w2 := rawSession(t, srv.Addr)
		w2.sendXid(zkproto.XidSetWatches, zkproto.OpSetWatches2, &zkproto.SetWatches2{
			RelativeZxid: rel,
			// Clients send empty lists, never null ones (3.8.0 answers
			// null with MarshallingError).
			DataWatches: []string{}, ExistWatches: []string{}, ChildWatches: []string{},
			PersistentWatches:          []string{"/changed"},
			PersistentRecursiveWatches: []string{"/kids"},
		})
		if f, evs := w2.await(zkproto.XidSetWatches, zkproto.OpSetWatches2); f.Header.Err != zkproto.CodeOK || len(evs) != 0 {
			t.Fatalf("setWatches2: %+v, events %v", f.Header, evs)
		}
		x.mustOK(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/changed", Version: -1})
		x.mustOK(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/changed", Version: -1})
		x.mustCreate("/kids/e", 0)
		got = w2.events()
		want = []zkproto.WatcherEvent{
			ev(zkproto.EventNodeDataChanged, "/changed"),
			ev(zkproto.EventNodeDataChanged, "/changed"),
			ev(zkproto.EventNodeCreated, "/kids/e"),
		}
		if !slices.Equal(got, want) {
			t.Errorf("setWatches2\n got %v\nwant %v", got, want)
		}
	})
}

func sortEvents(evs []zkproto.WatcherEvent) {
	slices.SortFunc(evs, func(a, b zkproto.WatcherEvent) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Type, b.Type))
	})
}

// TestWatchesRestoredAfterReconnect drives go-zk's own setWatches: while
// the watcher is cut off from the server, another client makes changes;
// when the watcher reconnects to the same session, the events it missed
// arrive, and the watches that did not fire stay registered.
func TestWatchesRestoredAfterReconnect(t *testing.T) {
	s := startServer(t)
	writer := zkOpen(t, s)
	for _, p := range []string{"/w", "/kids", "/del", "/quiet"} {
		mustCreate(t, writer, p, nil, 0, openACL)
	}
	px := cutproxy.New(t, s.Addr().String())
	watcher, _ := dialZK(t, 10*time.Second, px.Addr(), px.Addr())
	sid := watcher.SessionID()
	_, _, dataCh, err := watcher.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	_, _, existCh, err := watcher.ExistsW("/absent")
	if err != nil {
		t.Fatal(err)
	}
	_, _, childCh, err := watcher.ChildrenW("/kids")
	if err != nil {
		t.Fatal(err)
	}
	_, _, delCh, err := watcher.GetW("/del")
	if err != nil {
		t.Fatal(err)
	}
	_, _, quietCh, err := watcher.GetW("/quiet")
	if err != nil {
		t.Fatal(err)
	}

	px.Cut()
	eventually(t, waitTimeout, func() bool { return watcher.State() != zk.StateHasSession }, "the watcher to notice the cut")
	eventually(t, waitTimeout, func() bool { return !sessionConnected(s, sid) }, "the server to drop the watcher's connection")
	if _, err := writer.Set("/w", []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, writer, "/absent", nil, 0, openACL)
	mustCreate(t, writer, "/kids/c", nil, 0, openACL)
	if err := writer.Delete("/del", -1); err != nil {
		t.Fatal(err)
	}
	px.Restore()

	for _, c := range []struct {
		ch   <-chan zk.Event
		typ  zk.EventType
		path string
	}{
		{dataCh, zk.EventNodeDataChanged, "/w"},
		{existCh, zk.EventNodeCreated, "/absent"},
		{childCh, zk.EventNodeChildrenChanged, "/kids"},
		{delCh, zk.EventNodeDeleted, "/del"},
	} {
		if e := waitEvent(t, c.ch); e.Type != c.typ || e.Path != c.path {
			t.Errorf("missed event %+v, want %v %s", e, c.typ, c.path)
		}
	}
	if watcher.SessionID() != sid {
		t.Fatalf("session changed across the reconnect: %#x -> %#x", sid, watcher.SessionID())
	}
	select {
	case e := <-quietCh:
		t.Fatalf("unchanged node's watch fired: %+v", e)
	default:
	}
	if _, err := writer.Set("/quiet", []byte("now"), -1); err != nil {
		t.Fatal(err)
	}
	if e := waitEvent(t, quietCh); e.Type != zk.EventNodeDataChanged || e.Path != "/quiet" {
		t.Errorf("restored watch: %+v", e)
	}
}

// sessionConnected reports whether the server has a connection attached
// to session sid.
func sessionConnected(s *Server, sid int64) bool {
	found := false
	s.Inspect(func(core *zkcore.Server) {
		for _, ci := range core.Conns() {
			if ci.SessionID == sid {
				found = true
			}
		}
	})
	return found
}

// TestWatchEventsNeedRead: from 3.8.4 and 3.9.2 (CVE-2024-23944) an event
// reaches a watcher only if it may read the node the event is about (the
// parent, for NodeChildrenChanged); the one-shot watch is consumed anyway
// (docs/zookeeper-protocol.md §3.6).
func TestWatchEventsNeedRead(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		srv.keeperOnly(t, "3.8.0 delivers every event (the CVE-2024-23944 fix came in 3.8.4)")
		owner := rawSession(t, srv.Addr)
		owner.mustOK(zkproto.OpAuth, &zkproto.AuthPacket{Scheme: "digest", Auth: []byte("user:pass")})
		private := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.ID{Scheme: "digest", ID: userPassDigest}}}
		w := rawSession(t, srv.Addr)

		// NodeCreated on a node the watcher cannot read is dropped, and
		// the watch is gone.
		w.code(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/secret", Watch: true})
		if code, _ := owner.create("/secret", nil, private, 0); code != zkproto.CodeOK {
			t.Fatal(code)
		}
		if evs := w.events(); len(evs) != 0 {
			t.Errorf("event about an unreadable node: %v", evs)
		}
		if code := w.code(zkproto.OpCheckWatches, &zkproto.CheckWatchesRequest{Path: "/secret", Type: zkproto.WatcherAny}); code != zkproto.CodeNoWatcher {
			t.Errorf("dropped event left its watch: %v", code)
		}

		// A readable node's watch fires, until its ACL is taken away.
		owner.mustCreate("/open", 0)
		w.mustOK(zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/open", Watch: true})
		owner.mustOK(zkproto.OpSetACL, &zkproto.SetACLRequest{Path: "/open", ACL: private, Version: -1})
		owner.mustOK(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/open", Version: -1})
		if evs := w.events(); len(evs) != 0 {
			t.Errorf("NodeDataChanged on a node made unreadable: %v", evs)
		}

		// NodeChildrenChanged is checked on the parent: a readable parent's
		// watcher hears of an unreadable child.
		owner.mustCreate("/dir", 0)
		w.mustOK(zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: "/dir", Watch: true})
		if code, _ := owner.create("/dir/hidden", nil, private, 0); code != zkproto.CodeOK {
			t.Fatal(code)
		}
		if evs := w.events(); !slices.Equal(evs, []zkproto.WatcherEvent{ev(zkproto.EventNodeChildrenChanged, "/dir")}) {
			t.Errorf("child watch on a readable parent: %v", evs)
		}

		// A recursive watch sees the readable part of a subtree only.
		w.mustOK(zkproto.OpAddWatch, &zkproto.AddWatchRequest{Path: "/dir", Mode: zkproto.AddWatchPersistentRecursive})
		owner.mustCreate("/dir/visible", 0)
		owner.mustOK(zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/dir/hidden", Version: -1})
		owner.mustOK(zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/dir/hidden", Version: -1})
		if evs := w.events(); !slices.Equal(evs, []zkproto.WatcherEvent{ev(zkproto.EventNodeCreated, "/dir/visible")}) {
			t.Errorf("recursive watch: %v", evs)
		}
	})
}
