package server

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// Tests of every znode operation of docs/zookeeper-protocol.md §2 that go-zookeeper can send,
// plus the ones it cannot (driven with the raw client). The expected
// values are Apache ZooKeeper 3.8's, as docs/zookeeper-protocol.md records them.

func TestCreateModes(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		c := zkDial(t, srv.Addr)
		tests := []struct {
			name      string
			flags     int32
			path      string
			wantPath  string
			ephemeral bool
		}{
			{"persistent", zk.FlagPersistent, "/persistent/n", "/persistent/n", false},
			{"ephemeral", zk.FlagEphemeral, "/ephemeral/n", "/ephemeral/n", true},
			{"sequential", zk.FlagSequence, "/sequential/n-", "/sequential/n-0000000000", false},
			{"ephemeral sequential", zk.FlagEphemeralSequential, "/ephseq/n-", "/ephseq/n-0000000000", true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				mustCreate(t, c, zkproto.ParentPath(tt.path), nil, 0, openACL)
				got := mustCreate(t, c, tt.path, []byte("d"), tt.flags, openACL)
				if got != tt.wantPath {
					t.Fatalf("created %q, want %q", got, tt.wantPath)
				}
				st := mustStat(t, c, got)
				wantOwner := int64(0)
				if tt.ephemeral {
					wantOwner = c.SessionID()
				}
				if st.EphemeralOwner != wantOwner {
					t.Errorf("ephemeralOwner %#x, want %#x", st.EphemeralOwner, wantOwner)
				}
			})
		}
		// A second sequential child takes the next number.
		if got := mustCreate(t, c, "/sequential/n-", nil, zk.FlagSequence, openACL); got != "/sequential/n-0000000001" {
			t.Errorf("second sequential child %q", got)
		}
	})
}

func TestCreateContainerAndTTL(t *testing.T) {
	// Ticks of 100 ms: the reaper runs from Tick.
	s := startServer(t, fastSessions, func(c *Config) { c.Core.ContainerCheckMs = 50 })
	c := zkOpen(t, s)

	p, err := c.CreateContainer("/box", []byte("c"), zk.FlagContainer, openACL)
	if err != nil || p != "/box" {
		t.Fatalf("createContainer: %q %v", p, err)
	}
	if st := mustStat(t, c, "/box"); st.EphemeralOwner != 0 {
		t.Errorf("container shows ephemeralOwner %#x, want 0 (docs/zookeeper-protocol.md §5.4)", st.EphemeralOwner)
	}
	p, err = c.CreateTTL("/ttl", nil, zk.FlagTTL, openACL, time.Hour)
	if err != nil || p != "/ttl" {
		t.Fatalf("createTTL: %q %v", p, err)
	}
	if st := mustStat(t, c, "/ttl"); st.EphemeralOwner != 0 {
		t.Errorf("TTL node shows ephemeralOwner %#x, want 0 (docs/zookeeper-protocol.md §5.4)", st.EphemeralOwner)
	}
	p, err = c.CreateTTL("/ttl/s-", nil, zk.FlagPersistentSequentialWithTTL, openACL, time.Hour)
	if err != nil || p != "/ttl/s-0000000000" {
		t.Fatalf("sequential createTTL: %q %v", p, err)
	}

	// The reaper removes a container once its last child is gone, but
	// leaves one that never had a child (maxNeverUsedIntervalMs 0).
	mustCreate(t, c, "/unused", nil, 0, openACL)
	if _, err := c.CreateContainer("/unused/box", nil, zk.FlagContainer, openACL); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, "/box/child", nil, 0, openACL)
	_, _, ch, err := c.ExistsW("/box")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("/box/child", -1); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, ch); ev.Type != zk.EventNodeDeleted || ev.Path != "/box" {
		t.Fatalf("container not reaped: %+v", ev)
	}
	if ok, _, _ := c.Exists("/unused/box"); !ok {
		t.Error("a never-used container was reaped")
	}

	// A TTL node with a child stays however old it is; once the child is
	// gone and the ttl has passed, it goes.
	if _, err := c.CreateTTL("/parent", nil, zk.FlagTTL, openACL, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, "/parent/child", nil, 0, openACL)
	_, _, parentCh, err := c.ExistsW("/parent")
	if err != nil {
		t.Fatal(err)
	}

	// A TTL node goes once its ttl has passed without a change.
	if _, err := c.CreateTTL("/short", nil, zk.FlagTTL, openACL, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	_, _, ch, err = c.ExistsW("/short")
	if err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, ch); ev.Type != zk.EventNodeDeleted || ev.Path != "/short" {
		t.Fatalf("TTL node not reaped: %+v", ev)
	}
	select {
	case ev := <-parentCh:
		t.Fatalf("TTL node with a child reaped: %+v", ev)
	default:
	}
	if err := c.Delete("/parent/child", -1); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, parentCh); ev.Type != zk.EventNodeDeleted || ev.Path != "/parent" {
		t.Fatalf("emptied TTL node not reaped: %+v", ev)
	}
}

func TestCreateTTLDisabled(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Core.ExtendedTypes = false })
	c := zkOpen(t, s)
	_, err := c.CreateTTL("/ttl", nil, zk.FlagTTL, openACL, time.Minute)
	if got := codeOf(t, err); got != zkproto.CodeUnimplemented {
		t.Fatalf("createTTL with extended types off: %v, want Unimplemented", got)
	}
	// The raw client checks the precedence: TTL-mode flags on create(1)
	// are Unimplemented too (before the missing ttl is noticed), while a
	// flag outside CreateMode is still BadArguments.
	r := rawSession(t, s.Addr().String())
	if code, _ := r.create("/t", nil, zkproto.OpenACLUnsafe, zkproto.FlagPersistentWithTTL); code != zkproto.CodeUnimplemented {
		t.Errorf("create(1) with flags 5, extended types off: %v, want Unimplemented", code)
	}
	if code, _ := r.create("/t", nil, zkproto.OpenACLUnsafe, 7); code != zkproto.CodeBadArguments {
		t.Errorf("create(1) with flags 7: %v, want BadArguments", code)
	}
	// The connection stays usable: Unimplemented here is an answer, not a
	// protocol error.
	r.mustCreate("/after", 0)
}

// createCase is one create request for the error-precedence table.
type createCase struct {
	name  string
	op    zkproto.Op
	path  string
	acl   []zkproto.ACL
	flags int32
	ttl   int64 // for createTTL; ignored otherwise
	want  zkproto.Code
	// wantPath is checked on success.
	wantPath string
}

func (cc createCase) request() (zkproto.Op, jute.Record) {
	op := cc.op
	if op == 0 {
		op = zkproto.OpCreate
	}
	if op == zkproto.OpCreateTTL {
		return op, &zkproto.CreateTTLRequest{Path: cc.path, ACL: cc.acl, Flags: cc.flags, TTLMs: cc.ttl}
	}
	return op, &zkproto.CreateRequest{Path: cc.path, ACL: cc.acl, Flags: cc.flags}
}

// TestCreateErrorPrecedence checks docs/zookeeper-protocol.md §2.4: the first failing check
// decides the code, and every create, failed or not, consumes a zxid.
func TestCreateErrorPrecedence(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		r := rawSession(t, srv.Addr)
		open := zkproto.OpenACLUnsafe
		r.mustCreate("/p", 0)
		r.mustCreate("/ro", 0)
		r.mustCreate("/ro/x", 0)
		readOnly := []zkproto.ACL{{Perms: zkproto.PermRead, ID: zkproto.ID{Scheme: "world", ID: "anyone"}}}
		r.mustOK(zkproto.OpSetACL, &zkproto.SetACLRequest{Path: "/ro", ACL: readOnly, Version: -1})
		r.mustCreate("/eph", zkproto.FlagEphemeral)
		acl := func(scheme, id string) []zkproto.ACL {
			return []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.ID{Scheme: scheme, ID: id}}}
		}

		tests := []createCase{
			{name: "flags out of range beat a bad path", path: "noslash", flags: 7, want: zkproto.CodeBadArguments},
			{name: "negative flags", path: "/p/n", acl: open, flags: -1, want: zkproto.CodeBadArguments},
			{name: "ttl flags on create(1)", path: "/p/t", acl: open, flags: zkproto.FlagPersistentWithTTL, want: zkproto.CodeBadArguments},
			{name: "createTTL with a non-ttl flag", op: zkproto.OpCreateTTL, path: "/p/t", acl: open, ttl: 100, want: zkproto.CodeBadArguments},
			{name: "createTTL ttl 0", op: zkproto.OpCreateTTL, path: "/p/t", acl: open, flags: zkproto.FlagPersistentWithTTL, want: zkproto.CodeBadArguments},
			{name: "createTTL ttl negative", op: zkproto.OpCreateTTL, path: "/p/t", acl: open, flags: zkproto.FlagPersistentWithTTL, ttl: -5, want: zkproto.CodeBadArguments},
			{name: "createTTL ttl above 2^40-1", op: zkproto.OpCreateTTL, path: "/p/t", acl: open, flags: zkproto.FlagPersistentWithTTL, ttl: 1 << 40, want: zkproto.CodeBadArguments},
			{name: "createTTL ttl 2^40-1", op: zkproto.OpCreateTTL, path: "/p/ttlmax", acl: open, flags: zkproto.FlagPersistentWithTTL, ttl: 1<<40 - 1, wantPath: "/p/ttlmax"},
			{name: "path without a slash", path: "noslash", acl: open, want: zkproto.CodeBadArguments},
			{name: "path with NUL", path: "/p/a\x00b", acl: open, want: zkproto.CodeBadArguments},
			{name: "bad path beats invalid ACL", path: "noslash", acl: []zkproto.ACL{}, want: zkproto.CodeBadArguments},
			{name: "empty ACL", path: "/p/a", acl: []zkproto.ACL{}, want: zkproto.CodeInvalidACL},
			{name: "null ACL", path: "/p/a", acl: nil, want: zkproto.CodeInvalidACL},
			{name: "world:someone", path: "/p/a", acl: acl("world", "someone"), want: zkproto.CodeInvalidACL},
			{name: "digest without colon", path: "/p/a", acl: acl("digest", "nocolon"), want: zkproto.CodeInvalidACL},
			{name: "auth without identities", path: "/p/a", acl: zkproto.CreatorAllACL, want: zkproto.CodeInvalidACL},
			{name: "super scheme", path: "/p/a", acl: acl("super", "x"), want: zkproto.CodeInvalidACL},
			{name: "ip not an address", path: "/p/a", acl: acl("ip", "not-an-ip"), want: zkproto.CodeInvalidACL},
			{name: "unknown scheme", path: "/p/a", acl: acl("foo", "bar"), want: zkproto.CodeInvalidACL},
			{name: "invalid ACL beats missing parent", path: "/missing/a", acl: []zkproto.ACL{}, want: zkproto.CodeInvalidACL},
			{name: "missing parent", path: "/missing/a", acl: open, want: zkproto.CodeNoNode},
			{name: "missing parent beats bad final path", path: "/missing/", acl: open, want: zkproto.CodeNoNode},
			{name: "empty component means a missing parent", path: "/p//x", acl: open, want: zkproto.CodeNoNode},
			{name: "no CREATE on parent", path: "/ro/y", acl: open, want: zkproto.CodeNoAuth},
			{name: "NoAuth beats NodeExists", path: "/ro/x", acl: open, want: zkproto.CodeNoAuth},
			{name: "trailing slash", path: "/p/", acl: open, want: zkproto.CodeBadArguments},
			{name: "dot component", path: "/p/.", acl: open, want: zkproto.CodeBadArguments},
			{name: "dotdot component", path: "/p/..", acl: open, want: zkproto.CodeBadArguments},
			{name: "control character", path: "/p/a\x01", acl: open, want: zkproto.CodeBadArguments},
			{name: "root", path: "/", acl: open, want: zkproto.CodeNodeExists},
			{name: "/zookeeper", path: "/zookeeper", acl: open, want: zkproto.CodeNodeExists},
			{name: "existing node", path: "/p", acl: open, want: zkproto.CodeNodeExists},
			{name: "child of an ephemeral", path: "/eph/c", acl: open, want: zkproto.CodeNoChildrenForEphemerals},
			{name: "sequential child of an ephemeral", path: "/eph/c-", acl: open, flags: zkproto.FlagPersistentSequential, want: zkproto.CodeNoChildrenForEphemerals},
			{name: "sequential with a trailing slash", path: "/p/", acl: open, flags: zkproto.FlagPersistentSequential, wantPath: "/p/0000000001"},
			{name: "flag 4 on create(1) is accepted", path: "/p/c4", acl: open, flags: zkproto.FlagContainer, wantPath: "/p/c4"},
			{name: "duplicate ACL entries", path: "/p/dup", acl: append(slices.Clone(open), open...), wantPath: "/p/dup"},
			{name: "create2", op: zkproto.OpCreate2, path: "/p/c2", acl: open, wantPath: "/p/c2"},
			{name: "createContainer", op: zkproto.OpCreateContainer, path: "/p/cc", acl: open, flags: zkproto.FlagContainer, wantPath: "/p/cc"},
		}
		last := lastZxid(t, r)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				op, body := tt.request()
				f, _ := r.call(op, body)
				if f.Header.Err != tt.want {
					t.Errorf("code %v, want %v", f.Header.Err, tt.want)
				}
				if f.Header.Zxid != last+1 {
					t.Errorf("reply zxid %#x, want %#x: every create, failed or not, is a txn", f.Header.Zxid, last+1)
				}
				last = f.Header.Zxid
				if tt.want != zkproto.CodeOK {
					if f.Len != zkproto.ReplyHeaderLen {
						t.Errorf("error reply of %d bytes, want the header alone", f.Len)
					}
					return
				}
				var got string
				switch b := f.Body.(type) {
				case *zkproto.CreateResponse:
					got = b.Path
				case *zkproto.Create2Response:
					got = b.Path
					if b.Stat.Czxid != f.Header.Zxid {
						t.Errorf("create2 stat czxid %#x, want %#x", b.Stat.Czxid, f.Header.Zxid)
					}
				}
				if got != tt.wantPath {
					t.Errorf("created %q, want %q", got, tt.wantPath)
				}
			})
		}
		// Duplicates were removed from the stored ACL (docs/zookeeper-protocol.md §7.3).
		got := r.mustOK(zkproto.OpGetACL, &zkproto.GetACLRequest{Path: "/p/dup"}).(*zkproto.GetACLResponse)
		if len(got.ACL) != 1 {
			t.Errorf("duplicate ACL entries stored: %+v", got.ACL)
		}
	})
}

// lastZxid returns the server's last zxid as a ping reply reports it.
func lastZxid(t *testing.T, r *rawClient) int64 {
	t.Helper()
	r.sendXid(zkproto.XidPing, zkproto.OpPing, nil)
	f, _ := r.await(zkproto.XidPing, zkproto.OpPing)
	return f.Header.Zxid
}

func TestDelete(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		c := zkDial(t, srv.Addr)
		mustCreate(t, c, "/d", nil, 0, openACL)
		mustCreate(t, c, "/d/child", nil, 0, openACL)
		mustCreate(t, c, "/nodelete", nil, 0, openACL)
		mustCreate(t, c, "/nodelete/x", nil, 0, openACL)
		noDelete := zk.WorldACL(zk.PermAll &^ zk.PermDelete)
		if _, err := c.SetACL("/nodelete", noDelete, -1); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name    string
			path    string
			version int32
			want    zkproto.Code
		}{
			{"root", "/", -1, zkproto.CodeBadArguments},
			{"/zookeeper", "/zookeeper", -1, zkproto.CodeBadArguments},
			{"/zookeeper/quota", "/zookeeper/quota", -1, zkproto.CodeBadArguments},
			{"/zookeeper/config", "/zookeeper/config", -1, zkproto.CodeBadArguments},
			{"missing node", "/d/none", -1, zkproto.CodeNoNode},
			{"missing parent", "/none/x", -1, zkproto.CodeNoNode},
			{"no DELETE on parent", "/nodelete/x", -1, zkproto.CodeNoAuth},
			{"NoAuth on parent beats a missing node", "/nodelete/none", -1, zkproto.CodeNoAuth},
			{"bad version", "/d/child", 3, zkproto.CodeBadVersion},
			{"BadVersion beats NotEmpty", "/d", 3, zkproto.CodeBadVersion},
			{"not empty", "/d", -1, zkproto.CodeNotEmpty},
			{"matching version", "/d/child", 0, zkproto.CodeOK},
			{"now empty", "/d", 0, zkproto.CodeOK},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if got := codeOf(t, c.Delete(tt.path, tt.version)); got != tt.want {
					t.Fatalf("delete %s: %v, want %v", tt.path, got, tt.want)
				}
			})
		}
		if ok, _, _ := c.Exists("/d"); ok {
			t.Error("/d still exists")
		}
		// A path go-zk would refuse to send.
		r := rawSession(t, srv.Addr)
		if code := r.code(zkproto.OpDelete, &zkproto.DeleteRequest{Path: "noslash", Version: -1}); code != zkproto.CodeBadArguments {
			t.Errorf("delete without a slash: %v", code)
		}
	})
}

func TestExistsWatchOnMissingNode(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		watcher, writer := zkDial(t, srv.Addr), zkDial(t, srv.Addr)
		ok, _, ch, err := watcher.ExistsW("/later")
		if err != nil || ok {
			t.Fatalf("exists: %v %v", ok, err)
		}
		mustCreate(t, writer, "/later", nil, 0, openACL)
		if ev := waitEvent(t, ch); ev.Type != zk.EventNodeCreated || ev.Path != "/later" {
			t.Fatalf("event %+v, want NodeCreated /later", ev)
		}
	})
}

func TestGetSetVersions(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		c := zkDial(t, srv.Addr)
		mustCreate(t, c, "/v", []byte("one"), 0, openACL)
		data, st, err := c.Get("/v")
		if err != nil || string(data) != "one" || st.Version != 0 || st.DataLength != 3 {
			t.Fatalf("get: %q %+v %v", data, st, err)
		}
		created := *st
		st, err = c.Set("/v", []byte("three"), 0)
		if err != nil {
			t.Fatal(err)
		}
		if st.Version != 1 || st.DataLength != 5 || st.Mzxid <= created.Mzxid || st.Czxid != created.Czxid ||
			st.Ctime != created.Ctime || st.Mtime < created.Mtime || st.Pzxid != created.Pzxid {
			t.Errorf("stat after set: %+v (created %+v)", st, created)
		}
		if _, err := c.Set("/v", []byte("x"), 0); err != zk.ErrBadVersion {
			t.Errorf("set with a stale version: %v", err)
		}
		if st, err := c.Set("/v", []byte("four"), -1); err != nil || st.Version != 2 {
			t.Errorf("set with version -1: %+v %v", st, err)
		}
		if _, err := c.Set("/none", nil, -1); err != zk.ErrNoNode {
			t.Errorf("set on a missing node: %v", err)
		}
		if _, _, err := c.Get("/none"); err != zk.ErrNoNode {
			t.Errorf("get on a missing node: %v", err)
		}
		data, _, _ = c.Get("/v")
		if string(data) != "four" {
			t.Errorf("data %q", data)
		}
	})
}

func TestChildrenSorted(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		c := zkDial(t, srv.Addr)
		mustCreate(t, c, "/kids", nil, 0, openACL)
		names := []string{"delta", "alpha", "echo", "charlie", "bravo", "a", "b10", "b9"}
		rand.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
		for _, n := range names {
			mustCreate(t, c, "/kids/"+n, nil, 0, openACL)
		}
		got, st, err := c.Children("/kids")
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Sorted(slices.Values(names))
		if srv.Real {
			// Apache ZooKeeper returns its hash set's order; clients
			// must not rely on any (docs/zookeeper-protocol.md §2.4). keeper sorts.
			got = slices.Sorted(slices.Values(got))
		}
		if !slices.Equal(got, want) {
			t.Errorf("children %v, want %v", got, want)
		}
		if st.NumChildren != int32(len(names)) || st.Cversion != int32(len(names)) {
			t.Errorf("parent stat %+v", st)
		}
		if _, _, err := c.Children("/none"); err != zk.ErrNoNode {
			t.Errorf("children of a missing node: %v", err)
		}
		if got, _, _ := c.Children("/zookeeper"); !slices.Equal(got, []string{"config", "quota"}) {
			t.Errorf("children of /zookeeper: %v", got)
		}
		// getChildren(8), which go-zk never sends.
		r := rawSession(t, srv.Addr)
		body := r.mustOK(zkproto.OpGetChildren, &zkproto.GetChildrenRequest{Path: "/kids"}).(*zkproto.GetChildrenResponse)
		if srv.Real {
			body.Children = slices.Sorted(slices.Values(body.Children))
		}
		if !slices.Equal(body.Children, want) {
			t.Errorf("getChildren(8): %v", body.Children)
		}
	})
}

func TestMultiSuccess(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		c := zkDial(t, srv.Addr)
		res, err := c.Multi(
			&zk.CreateRequest{Path: "/m", Data: []byte("a"), Acl: openACL},
			&zk.CreateRequest{Path: "/m/q-", Acl: openACL, Flags: zk.FlagSequence},
			&zk.CreateRequest{Path: "/m/q-", Acl: openACL, Flags: zk.FlagSequence},
			&zk.SetDataRequest{Path: "/m", Data: []byte("b"), Version: 0},
			&zk.CheckVersionRequest{Path: "/m", Version: 1},
			&zk.DeleteRequest{Path: "/m/q-0000000000", Version: -1},
		)
		if err != nil {
			t.Fatalf("multi: %v", err)
		}
		if len(res) != 6 {
			t.Fatalf("%d results", len(res))
		}
		for i, r := range res {
			if r.Error != nil {
				t.Errorf("result %d: %v", i, r.Error)
			}
		}
		if res[0].String != "/m" || res[1].String != "/m/q-0000000000" || res[2].String != "/m/q-0000000001" {
			t.Errorf("create results %q %q %q (sequential creates in one multi get consecutive numbers)",
				res[0].String, res[1].String, res[2].String)
		}
		set := res[3].Stat
		if set == nil || set.Version != 1 {
			t.Fatalf("setData result stat %+v", set)
		}
		// One txn: every effect carries the same zxid and time.
		st := mustStat(t, c, "/m")
		if st.Czxid != st.Mzxid || set.Mzxid != st.Czxid || st.Ctime != st.Mtime || st.Pzxid != st.Czxid {
			t.Errorf("multi effects span txns: %+v (setData result %+v)", st, set)
		}
		if got, _, _ := c.Children("/m"); !slices.Equal(got, []string{"q-0000000001"}) {
			t.Errorf("children %v", got)
		}
		// An empty multi succeeds with no results.
		if res, err := c.Multi(); err != nil || len(res) != 0 {
			t.Errorf("empty multi: %v %v", res, err)
		}
	})
}

func TestMultiFailureRollsBack(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		c := zkDial(t, srv.Addr)
		mustCreate(t, c, "/base", nil, 0, openACL)
		before := mustStat(t, c, "/base")
		res, err := c.Multi(
			&zk.CreateRequest{Path: "/new", Acl: openACL},
			&zk.CheckVersionRequest{Path: "/base", Version: 7},
			&zk.CreateRequest{Path: "/new2", Acl: openACL},
			&zk.DeleteRequest{Path: "/base", Version: -1},
		)
		if err != zk.ErrBadVersion {
			t.Fatalf("multi error %v, want the first failure, BadVersion", err)
		}
		want := []zkproto.Code{zkproto.CodeOK, zkproto.CodeBadVersion, zkproto.CodeRuntimeInconsistency, zkproto.CodeRuntimeInconsistency}
		if len(res) != len(want) {
			t.Fatalf("%d results, want %d", len(res), len(want))
		}
		for i, r := range res {
			if got := codeOf(t, r.Error); got != want[i] {
				t.Errorf("result %d: %v, want %v", i, got, want[i])
			}
		}
		if ok, _, _ := c.Exists("/new"); ok {
			t.Error("/new exists: the failed multi was not rolled back")
		}
		after := mustStat(t, c, "/base")
		if *after != *before {
			t.Errorf("/base changed: %+v -> %+v", before, after)
		}
		// The failed multi still consumed a zxid (docs/zookeeper-protocol.md §2.3).
		mustCreate(t, c, "/next", nil, 0, openACL)
		if st := mustStat(t, c, "/next"); st.Czxid != before.Czxid+2 {
			t.Errorf("czxid after a failed multi %#x, want %#x", st.Czxid, before.Czxid+2)
		}
	})
}

// TestMultiFailures checks that later ops see earlier ops' effects, and
// that the first failure decides the results.
func TestMultiFailures(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		c := zkDial(t, srv.Addr)
		mustCreate(t, c, "/full", nil, 0, openACL)
		mustCreate(t, c, "/full/kid", nil, 0, openACL)
		create := func(p string) *zk.CreateRequest { return &zk.CreateRequest{Path: p, Acl: openACL} }
		const rolledBack, rest = zkproto.CodeOK, zkproto.CodeRuntimeInconsistency
		tests := []struct {
			name string
			ops  []any
			want []zkproto.Code
		}{
			{"create twice", []any{create("/x"), create("/x")}, []zkproto.Code{rolledBack, zkproto.CodeNodeExists}},
			{"check a missing node", []any{&zk.CheckVersionRequest{Path: "/none", Version: -1}, create("/x")},
				[]zkproto.Code{zkproto.CodeNoNode, rest}},
			{"setData sees the new node's version", []any{create("/y"), &zk.SetDataRequest{Path: "/y", Version: 1}},
				[]zkproto.Code{rolledBack, zkproto.CodeBadVersion}},
			{"setData after delete", []any{create("/z"), &zk.DeleteRequest{Path: "/z", Version: -1}, &zk.SetDataRequest{Path: "/z", Version: -1}},
				[]zkproto.Code{rolledBack, rolledBack, zkproto.CodeNoNode}},
			{"delete a parent", []any{&zk.DeleteRequest{Path: "/full", Version: -1}}, []zkproto.Code{zkproto.CodeNotEmpty}},
			{"delete a system node", []any{&zk.DeleteRequest{Path: "/zookeeper", Version: -1}, create("/x")},
				[]zkproto.Code{zkproto.CodeBadArguments, rest}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				res, err := c.Multi(tt.ops...)
				if err == nil || len(res) != len(tt.want) {
					t.Fatalf("multi: %v, %d results", err, len(res))
				}
				for i, r := range res {
					if got := codeOf(t, r.Error); got != tt.want[i] {
						t.Errorf("result %d: %v, want %v", i, got, tt.want[i])
					}
				}
			})
		}
		for _, p := range []string{"/x", "/y", "/z"} {
			if ok, _, _ := c.Exists(p); ok {
				t.Errorf("%s exists after failed multis", p)
			}
		}
		// Ops that undo each other succeed and leave nothing behind.
		if _, err := c.Multi(create("/a"), create("/a/b"), &zk.DeleteRequest{Path: "/a/b", Version: -1},
			&zk.DeleteRequest{Path: "/a", Version: 0}); err != nil {
			t.Fatalf("self-cancelling multi: %v", err)
		}
		if ok, _, _ := c.Exists("/a"); ok {
			t.Error("/a exists")
		}
	})
}

func TestMultiRaw(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		r := rawSession(t, srv.Addr)
		r.mustCreate("/r", 0)
		// create2 inside a multi is answered with a create2 result, as the
		// docs/zookeeper-protocol.md recommends (3.8.0-3.8.3 answer with a create result).
		body := r.mustOK(zkproto.OpMulti, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Op: zkproto.OpCreate2, Record: &zkproto.CreateRequest{Path: "/r/c2", ACL: zkproto.OpenACLUnsafe}},
			{Op: zkproto.OpSetData, Record: &zkproto.SetDataRequest{Path: "/r", Data: []byte("x"), Version: -1}},
		}}).(*zkproto.MultiResponse)
		if len(body.Results) != 2 {
			t.Fatalf("results %+v", body.Results)
		}
		switch rec := body.Results[0].Record.(type) {
		case *zkproto.Create2Response:
			if srv.Real || rec.Path != "/r/c2" || rec.Stat.Czxid == 0 {
				t.Errorf("create2 result %+v", rec)
			}
		case *zkproto.CreateResponse:
			if !srv.Real || rec.Path != "/r/c2" {
				t.Errorf("create2 answered with a create result %+v", rec)
			}
		default:
			t.Errorf("create2 result %+v", body.Results[0])
		}
		// multiRead: each op on its own; a failure is an error result, and
		// the reply header says OK.
		before := lastZxid(t, r)
		f, _ := r.call(zkproto.OpMultiRead, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
			{Op: zkproto.OpGetData, Record: &zkproto.GetDataRequest{Path: "/r"}},
			{Op: zkproto.OpGetChildren, Record: &zkproto.GetChildrenRequest{Path: "/none"}},
			{Op: zkproto.OpGetChildren, Record: &zkproto.GetChildrenRequest{Path: "/r"}},
		}})
		if f.Header.Err != zkproto.CodeOK {
			t.Fatalf("multiRead: %v", f.Header.Err)
		}
		if f.Header.Zxid != before {
			t.Errorf("multiRead consumed a zxid: %#x -> %#x", before, f.Header.Zxid)
		}
		res := f.Body.(*zkproto.MultiResponse).Results
		if len(res) != 3 {
			t.Fatalf("%d results", len(res))
		}
		if d, ok := res[0].Record.(*zkproto.GetDataResponse); !ok || string(d.Data) != "x" {
			t.Errorf("getData result %+v", res[0])
		}
		if res[1].Op != zkproto.OpError || res[1].Err != zkproto.CodeNoNode {
			t.Errorf("missing node result %+v", res[1])
		}
		if ch, ok := res[2].Record.(*zkproto.GetChildrenResponse); !ok || !slices.Equal(ch.Children, []string{"c2"}) {
			t.Errorf("getChildren result %+v", res[2])
		}
	})
}

func TestSync(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		c := zkDial(t, srv.Addr)
		for _, p := range []string{"/", "/zookeeper", "/not/there"} {
			got, err := c.Sync(p)
			if err != nil || got != p {
				t.Errorf("sync %s: %q %v", p, got, err)
			}
		}
	})
}

func TestReconfigDisabled(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		c := zkDial(t, srv.Addr)
		if _, err := c.IncrementalReconfig([]string{"server.2=127.0.0.1:2888:3888;2182"}, nil, -1); err != zk.ErrReconfigDisabled {
			t.Errorf("reconfig standalone: %v, want ReconfigDisabled", err)
		}
	})
}

// TestStatFields walks docs/zookeeper-protocol.md §5: the exact Stat of each change, the cversion
// quirks, and null against empty data.
func TestStatFields(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		c := zkDial(t, srv.Addr)

		// The built-in tree (§5.5). Its stored stats are zeros, and its
		// children were never "created", so the visible cversion of §5.2,
		// 2*stored - numChildren, is negative: -1 for / (child zookeeper) and
		// -2 for /zookeeper (children quota and config).
		if st := mustStat(t, c, "/"); st.Czxid != 0 || st.Mzxid != 0 || st.Pzxid != 0 || st.Cversion != -1 ||
			st.NumChildren != 1 || st.Version != 0 || st.Aversion != 0 {
			t.Errorf("fresh root %+v", st)
		}
		if st := mustStat(t, c, "/zookeeper"); st.Czxid != 0 || st.Cversion != -2 || st.NumChildren != 2 {
			t.Errorf("/zookeeper %+v", st)
		}
		if st := mustStat(t, c, "/zookeeper/config"); st.Aversion != -1 || st.Czxid != 0 || st.Version != 0 {
			t.Errorf("/zookeeper/config %+v, want aversion -1", st)
		}
		acl, _, err := c.GetACL("/zookeeper/config")
		if err != nil || len(acl) != 1 || acl[0] != (zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}) {
			t.Errorf("/zookeeper/config ACL %+v %v", acl, err)
		}

		// create: N gets czxid = mzxid = pzxid; P gets pzxid and cversion, not
		// mzxid or version.
		mustCreate(t, c, "/a", []byte("xy"), 0, openACL)
		a := mustStat(t, c, "/a")
		if a.Czxid == 0 || a.Mzxid != a.Czxid || a.Pzxid != a.Czxid || a.Ctime != a.Mtime || a.Ctime == 0 ||
			a.Version != 0 || a.Cversion != 0 || a.Aversion != 0 || a.DataLength != 2 || a.NumChildren != 0 || a.EphemeralOwner != 0 {
			t.Errorf("new node %+v", a)
		}
		root := mustStat(t, c, "/")
		// Root quirk: stored cversion 1 (one client create), two children
		// (zookeeper was never created), so the visible value is 2*1-2 = 0.
		if root.Pzxid != a.Czxid || root.NumChildren != 2 || root.Cversion != 0 || root.Mzxid != 0 || root.Version != 0 {
			t.Errorf("root after create /a: %+v", root)
		}

		// cversion: create then delete a child gives visible 2; the next
		// sequential suffix uses the stored count, 1.
		mustCreate(t, c, "/a/b", nil, 0, openACL)
		b := mustStat(t, c, "/a/b")
		if err := c.Delete("/a/b", -1); err != nil {
			t.Fatal(err)
		}
		a2 := mustStat(t, c, "/a")
		if a2.Cversion != 2 || a2.NumChildren != 0 || a2.Pzxid <= b.Czxid || a2.Mzxid != a.Mzxid || a2.Version != 0 {
			t.Errorf("/a after create+delete of a child: %+v", a2)
		}
		if p := mustCreate(t, c, "/a/s-", nil, zk.FlagSequence, openACL); p != "/a/s-0000000001" {
			t.Errorf("sequential after create+delete: %q, want /a/s-0000000001", p)
		}
		if p := mustCreate(t, c, "/a/", nil, zk.FlagSequence, openACL); p != "/a/0000000002" {
			t.Errorf("sequential with a trailing slash: %q, want /a/0000000002", p)
		}

		// setData changes mzxid, mtime, version, dataLength only.
		set, err := c.Set("/a", []byte("longer"), -1)
		if err != nil {
			t.Fatal(err)
		}
		a3 := mustStat(t, c, "/a")
		if *set != *a3 || a3.Mzxid <= a2.Pzxid || a3.Version != 1 || a3.DataLength != 6 || a3.Czxid != a.Czxid ||
			a3.Ctime != a.Ctime || a3.Cversion != a2.Cversion+2 || a3.Aversion != 0 {
			t.Errorf("after setData %+v (reply %+v)", a3, set)
		}

		// setACL changes aversion only.
		acled, err := c.SetACL("/a", zk.WorldACL(zk.PermAll), 0)
		if err != nil {
			t.Fatal(err)
		}
		if acled.Aversion != 1 || acled.Mzxid != a3.Mzxid || acled.Version != a3.Version || acled.Mtime != a3.Mtime || acled.Pzxid != a3.Pzxid {
			t.Errorf("after setACL %+v (before %+v)", acled, a3)
		}
		if _, err := c.SetACL("/a", zk.WorldACL(zk.PermAll), 0); err != zk.ErrBadVersion {
			t.Errorf("setACL with a stale aversion: %v", err)
		}

		// getAllChildrenNumber counts every descendant; for / that includes
		// the three system nodes (§2.4: /a, /a/s-…1, /a/0…2 give 6).
		r := rawSession(t, srv.Addr)
		count := func(path string) (zkproto.Code, int32) {
			f, _ := r.call(zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: path})
			if f.Header.Err != zkproto.CodeOK {
				return f.Header.Err, 0
			}
			return f.Header.Err, f.Body.(*zkproto.GetAllChildrenNumberResponse).TotalNumber
		}
		for path, want := range map[string]int32{"/": 6, "/zookeeper": 2, "/a": 2, "/a/s-0000000001": 0} {
			if code, n := count(path); code != zkproto.CodeOK || n != want {
				t.Errorf("getAllChildrenNumber(%s) = %d %v, want %d", path, n, code, want)
			}
		}
		if code, _ := count("/none"); code != zkproto.CodeNoNode {
			t.Errorf("getAllChildrenNumber of a missing node: %v", code)
		}
	})
}

// TestNullAndEmptyData documents how go-zk sends data: a nil slice is the
// null buffer (length -1), an empty slice is length 0, and the server keeps
// the difference (Java does too: getData returns null for a node created
// with null data).
func TestNullAndEmptyData(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv target) {
		c := zkDial(t, srv.Addr)
		mustCreate(t, c, "/null", nil, 0, openACL)
		mustCreate(t, c, "/empty", []byte{}, 0, openACL)
		r := rawSession(t, srv.Addr)
		get := func(path string) []byte {
			return r.mustOK(zkproto.OpGetData, &zkproto.GetDataRequest{Path: path}).(*zkproto.GetDataResponse).Data
		}
		if d := get("/null"); d != nil {
			t.Errorf("/null data %q, want null", d)
		}
		if d := get("/empty"); d == nil || len(d) != 0 {
			t.Errorf("/empty data %v, want empty, not null", d)
		}
		if d, st, _ := c.Get("/null"); d != nil || st.DataLength != 0 {
			t.Errorf("go-zk get /null: %v %+v", d, st)
		}
		// Setting null data makes the node's data null again.
		if _, err := c.Set("/empty", nil, -1); err != nil {
			t.Fatal(err)
		}
		if d := get("/empty"); d != nil {
			t.Errorf("after set(nil) data %v, want null", d)
		}
	})
}
