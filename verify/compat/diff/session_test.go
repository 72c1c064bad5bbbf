package diff

import (
	"slices"
	"testing"

	"keeper/coordination/zkproto"
)

var eventNames = map[zkproto.EventType]string{
	zkproto.EventNodeCreated:         "NodeCreated",
	zkproto.EventNodeDeleted:         "NodeDeleted",
	zkproto.EventNodeDataChanged:     "NodeDataChanged",
	zkproto.EventNodeChildrenChanged: "NodeChildrenChanged",
}

// eventSet renders a slot's events of one step as a sorted list.
func eventSet(o *outcome, slot int) []string {
	var out []string
	for _, e := range o.events[slot] {
		out = append(out, eventNames[e.ev.Type]+" "+e.ev.Path)
	}
	slices.Sort(out)
	return out
}

// TestSessionClose checks side by side what ending a session does to its
// ephemerals: closeSession and expiry delete them all, with the closing
// txn's zxid as their parents' pzxid, and every other session's watchers
// see NodeDeleted and NodeChildrenChanged for them. Both servers must agree
// (runScript compares every step), and ZooKeeper's outcome must be the
// one docs/zookeeper-protocol.md §3.2 and §6.3 describe.
func TestSessionClose(t *testing.T) {
	for _, expire := range []bool{false, true} {
		name := "closeSession"
		if expire {
			name = "expiry"
		}
		t.Run(name, func(t *testing.T) {
			if expire && testing.Short() {
				t.Skip("waits about 6 s for a session to expire")
			}
			testSessionEnd(t, expire)
		})
	}
}

func testSessionEnd(t *testing.T, expire bool) {
	const owner, watcher, recursive = 0, 1, 2
	steps := []*step{
		// A fresh owner session with the shortest timeout, so expiry is quick.
		{kind: kindClose, slot: owner, name: "script", op: zkproto.OpCloseSession, timeoutMs: 1},
		create(watcher, "/s", zkproto.FlagPersistent),
		create(owner, "/s/e", zkproto.FlagEphemeral),
		create(owner, "/s/q-", zkproto.FlagEphemeralSequential),
		create(owner, "/s/q-", zkproto.FlagEphemeralSequential),
		create(owner, "/top", zkproto.FlagEphemeral),
		create(owner, "/s/keep", zkproto.FlagPersistent),
		exists(watcher, "/s/e", true),
		getChildren(watcher, "/s", true),
		getData(watcher, "/top", true),
		exists(watcher, "/s/never", true),
		addWatch(recursive, "/s", zkproto.AddWatchPersistentRecursive),
		addWatch(recursive, "/", zkproto.AddWatchPersistent),
		getData(owner, "/s/e", true), // the closing connection watches its own ephemeral
	}
	end := len(steps)
	if expire {
		steps = append(steps, &step{kind: kindExpire, slot: owner, watcher: watcher, name: "script",
			timeoutMs: defaultTimeoutMs})
	} else {
		steps = append(steps, closeSession(owner))
	}
	steps = append(steps,
		req(watcher, zkproto.OpGetChildren2, &zkproto.GetChildren2Request{Path: "/s"}),
		exists(watcher, "/top", false),
		req(owner, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: "/"}),
		setData(watcher, "/s/keep"), // the watches that fired were one-shot; the recursive one was not
	)
	r := runScript(t, 3, serverOptions{extendedTypes: true}, steps)

	z := r.z[end]
	if got, want := eventSet(z, watcher), []string{
		"NodeChildrenChanged /s", "NodeDeleted /s/e", "NodeDeleted /top",
	}; !slices.Equal(got, want) {
		t.Errorf("watcher's events when the session ended: %q, want %q", got, want)
	}
	if got, want := eventSet(z, recursive), []string{
		"NodeChildrenChanged /", "NodeDeleted /s/e", "NodeDeleted /s/q-0000000001", "NodeDeleted /s/q-0000000002",
	}; !slices.Equal(got, want) {
		t.Errorf("recursive watcher's events when the session ended: %q, want %q", got, want)
	}
	var closeZxid int64
	switch {
	case !expire && z.hasReply:
		closeZxid = z.reply.hdr.Zxid
	case expire:
		// The expiry's closeSession txn is followed only by the createSession
		// of the owner slot's new session.
		closeZxid = r.z[end+1].reply.hdr.Zxid - 1
	}
	children, ok := r.z[end+1].reply.rec.(*zkproto.GetChildren2Response)
	if !ok {
		t.Fatalf("getChildren2 /s after the session ended: %s", r.zl[end+1])
	}
	if got := children.Children; !slices.Equal(got, []string{"keep"}) {
		t.Errorf("children of /s after the session ended: %q, want [keep]", got)
	}
	if children.Stat.Pzxid != closeZxid {
		t.Errorf("pzxid of /s is %#x, want the session end's zxid %#x", children.Stat.Pzxid, closeZxid)
	}
	if got := r.z[end+2].reply.hdr.Err; got != zkproto.CodeNoNode {
		t.Errorf("exists /top after the session ended: %v, want NoNode", got)
	}
	if got := eventSet(r.z[end+4], recursive); !slices.Equal(got, []string{"NodeDataChanged /s/keep"}) {
		t.Errorf("recursive watcher after the session ended got %q for setData /s/keep", got)
	}
	if got := eventSet(r.z[end+4], watcher); len(got) != 0 {
		t.Errorf("one-shot watcher got %q after its watches fired", got)
	}
}

// TestTTLDisabled compares the servers with extended types off, where
// createTTL is refused (docs/zookeeper-protocol.md §2.4: Unimplemented, and the zxid is still
// consumed).
func TestTTLDisabled(t *testing.T) {
	ttl := func(slot int, path string, flags int32, ttlMs int64) *step {
		return req(slot, zkproto.OpCreateTTL, &zkproto.CreateTTLRequest{Path: path, Data: []byte("x"),
			ACL: zkproto.OpenACLUnsafe, Flags: flags, TTLMs: ttlMs})
	}
	runScript(t, 1, serverOptions{extendedTypes: false}, []*step{
		ttl(0, "/t", zkproto.FlagPersistentWithTTL, 1000),
		ttl(0, "/t-", zkproto.FlagPersistentSequentialWithTTL, 1000),
		ttl(0, "/t", zkproto.FlagPersistentWithTTL, 0),
		ttl(0, "/t", zkproto.FlagPersistent, 1000),
		create(0, "/t", zkproto.FlagPersistentWithTTL),
		req(0, zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Op: zkproto.OpCreate, Record: &zkproto.CreateRequest{Path: "/m", ACL: zkproto.OpenACLUnsafe}},
			{Op: zkproto.OpCreateTTL, Record: &zkproto.CreateTTLRequest{Path: "/m/t", ACL: zkproto.OpenACLUnsafe,
				Flags: zkproto.FlagPersistentWithTTL, TTLMs: 1000}},
		}}),
		create(0, "/t", zkproto.FlagPersistent),
		exists(0, "/t", false),
		exists(0, "/m", false),
	})
}
