package zkclient

import (
	"slices"
	"testing"

	"keeper/coordination/zkproto"
)

// TestWatchesFollowTheSession sets one watch of each kind, lets one fire,
// breaks the connection, changes nodes while the session has no
// connection, and reattaches with Conn.Watches: the server fires at once
// the watches whose nodes changed meanwhile, and the others still fire
// afterwards.
func TestWatchesFollowTheSession(t *testing.T) {
	addr := startServer(t)
	ctx := testCtx(t)
	c := dial(t, addr, Options{})
	other := dial(t, addr, Options{})
	for _, p := range []string{"/a", "/b", "/p", "/gone"} {
		if _, _, err := other.Create(ctx, p, nil, CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.Get(ctx, "/a", true); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Exists(ctx, "/missing", true); err != nil || ok {
		t.Fatalf("exists /missing: %v %v", ok, err)
	}
	if _, _, err := c.Children(ctx, "/b", true); err != nil {
		t.Fatal(err)
	}
	if err := c.AddWatch(ctx, "/p", zkproto.AddWatchPersistent); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get(ctx, "/gone", true); err != nil {
		t.Fatal(err)
	}
	if err := other.Delete(ctx, "/gone", -1); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, c); ev.Type != zkproto.EventNodeDeleted || ev.Path != "/gone" {
		t.Fatalf("event %+v", ev)
	}
	ws := c.Watches()
	if !slices.Equal(ws.DataWatches, []string{"/a"}) || !slices.Equal(ws.ExistWatches, []string{"/missing"}) ||
		!slices.Equal(ws.ChildWatches, []string{"/b"}) || !slices.Equal(ws.PersistentWatches, []string{"/p"}) ||
		len(ws.PersistentRecursiveWatches) != 0 {
		t.Fatalf("watches %+v", ws)
	}

	id, passwd := c.SessionID(), c.SessionPasswd()
	c.nc.Close() // the connection breaks; the session lives on
	<-c.Done()
	if _, err := other.Set(ctx, "/a", []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.Create(ctx, "/missing", nil, CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	again := dial(t, addr, Options{SessionID: id, SessionPasswd: passwd, LastZxidSeen: ws.RelativeZxid, Watches: &ws})
	got := map[string]zkproto.EventType{}
	for range 2 {
		ev := nextEvent(t, again)
		got[ev.Path] = ev.Type
	}
	if got["/a"] != zkproto.EventNodeDataChanged || got["/missing"] != zkproto.EventNodeCreated {
		t.Fatalf("events on reattaching: %v", got)
	}
	// Those two fired; the child and persistent watches are still set.
	if ws := again.Watches(); len(ws.DataWatches)+len(ws.ExistWatches) != 0 || len(ws.ChildWatches) != 1 ||
		len(ws.PersistentWatches) != 1 {
		t.Fatalf("watches after reattaching: %+v", ws)
	}
	if _, _, err := other.Create(ctx, "/b/kid", nil, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, again); ev.Type != zkproto.EventNodeChildrenChanged || ev.Path != "/b" {
		t.Fatalf("child watch after reattaching: %+v", ev)
	}
	for range 2 {
		if _, err := other.Set(ctx, "/p", []byte("x"), -1); err != nil {
			t.Fatal(err)
		}
		if ev := nextEvent(t, again); ev.Type != zkproto.EventNodeDataChanged || ev.Path != "/p" {
			t.Fatalf("persistent watch after reattaching: %+v", ev)
		}
	}
	// removeWatches forgets it.
	if _, _, err := again.Do(ctx, zkproto.OpRemoveWatches,
		&zkproto.RemoveWatchesRequest{Path: "/p", Type: zkproto.WatcherAny}); err != nil {
		t.Fatal(err)
	}
	if ws := again.Watches(); len(ws.PersistentWatches) != 0 {
		t.Fatalf("watches after removeWatches: %+v", ws)
	}
}
