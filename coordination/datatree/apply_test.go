package datatree

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
)

func changes(kv ...any) []Change {
	var out []Change
	for i := 0; i < len(kv); i += 2 {
		out = append(out, Change{Type: kv[i].(zkproto.EventType), Path: kv[i+1].(string)})
	}
	return out
}

const (
	created  = zkproto.EventNodeCreated
	deleted  = zkproto.EventNodeDeleted
	dataChg  = zkproto.EventNodeDataChanged
	childChg = zkproto.EventNodeChildrenChanged
)

func TestCreateKinds(t *testing.T) {
	ttlOwner, _ := TTLOwner(5000)
	tests := []struct {
		name      string
		op        zkproto.Op
		rec       jute.Record
		owner     int64 // stored
		visible   int64 // in Stat
		ephemeral bool
		container bool
		ttl       int64
	}{
		{"persistent", zkproto.OpCreate, &txn.Create{Path: "/n", Data: []byte("d"), ACL: worldAll, ParentCversion: 1}, 0, 0, false, false, 0},
		{"ephemeral create2", zkproto.OpCreate2, &txn.Create{Path: "/n", ACL: worldAll, Ephemeral: true, ParentCversion: 1}, sess1, sess1, true, false, 0},
		{"container", zkproto.OpCreateContainer, &txn.CreateContainer{Path: "/n", ACL: worldAll, ParentCversion: 1}, ContainerOwner, 0, false, true, 0},
		{"ttl", zkproto.OpCreateTTL, &txn.CreateTTL{Path: "/n", ACL: worldAll, ParentCversion: 1, TTL: 5000}, ttlOwner, 0, false, false, 5000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			res, ch := e.mustApply(tc.op, tc.rec)
			z, tm := e.zxid(), baseTime+1
			n := e.tree.Node("/n")
			wantStat := zkproto.Stat{Czxid: z, Mzxid: z, Ctime: tm, Mtime: tm, Pzxid: z,
				EphemeralOwner: tc.visible, DataLength: int32(len(n.Data()))}
			if res.Stat != wantStat || n.Stat() != wantStat {
				t.Errorf("stat = %+v / %+v, want %+v", res.Stat, n.Stat(), wantStat)
			}
			if res.Op != tc.op || res.Path != "/n" {
				t.Errorf("result = %+v", res)
			}
			if n.Persisted().EphemeralOwner != tc.owner {
				t.Errorf("stored owner = %#x, want %#x", n.Persisted().EphemeralOwner, tc.owner)
			}
			if n.IsEphemeral() != tc.ephemeral || n.IsContainer() != tc.container || n.IsTTL() != (tc.ttl != 0) || n.TTL() != tc.ttl {
				t.Errorf("kind: ephemeral %v container %v ttl %v/%d", n.IsEphemeral(), n.IsContainer(), n.IsTTL(), n.TTL())
			}
			if want := changes(created, "/n", childChg, "/"); !reflect.DeepEqual(withoutACL(ch), want) {
				t.Errorf("changes = %v, want %v", ch, want)
			}
			var wantEph []string
			if tc.ephemeral {
				wantEph = []string{"/n"}
				if n.Owner() != sess1 {
					t.Errorf("Owner = %#x", n.Owner())
				}
			}
			if got := e.tree.Ephemerals(sess1); !slices.Equal(got, wantEph) {
				t.Errorf("Ephemerals = %v, want %v", got, wantEph)
			}
			if got := len(e.tree.Containers()); got != map[bool]int{true: 1}[tc.container] {
				t.Errorf("Containers = %v", e.tree.Containers())
			}
			if got := len(e.tree.TTLNodes()); got != map[bool]int{true: 1}[tc.ttl != 0] {
				t.Errorf("TTLNodes = %v", e.tree.TTLNodes())
			}
			root := e.tree.Node("/").Persisted()
			if root.Cversion != 1 || root.Pzxid != z || root.Mzxid != 0 {
				t.Errorf("root stat = %+v", root)
			}
			// delete untracks
			e.mustApply(zkproto.OpDelete, &txn.Delete{Path: "/n"})
			if e.tree.EphemeralCount() != 0 || e.tree.Containers() != nil || e.tree.TTLNodes() != nil || e.tree.EphemeralSessions() != nil {
				t.Errorf("owner sets not emptied")
			}
		})
	}
}

// TestSpecCversionSequence is the verified sequence of docs/zookeeper-protocol.md §5.2.
func TestSpecCversionSequence(t *testing.T) {
	e := newEnv(t)
	e.create("/a", nil)
	e.create("/a/b", nil)
	_, ch := e.mustApply(zkproto.OpDelete, &txn.Delete{Path: "/a/b"})
	if want := changes(deleted, "/a/b", childChg, "/a"); !reflect.DeepEqual(withoutACL(ch), want) {
		t.Fatalf("changes = %v, want %v", ch, want)
	}
	st := e.tree.Node("/a").Stat()
	if st.Cversion != 2 || st.NumChildren != 0 || st.Pzxid != e.zxid() {
		t.Fatalf("stat /a = %+v, want cversion 2, numChildren 0, pzxid %#x", st, e.zxid())
	}
	// The next sequential child would be numbered from the stored value.
	if got := e.tree.Node("/a").Persisted().Cversion; got != 1 {
		t.Fatalf("stored cversion = %d, want 1", got)
	}
	// Root quirk: one client create, two children, visible cversion 0.
	root := e.tree.Node("/").Stat()
	if root.Cversion != 0 || root.NumChildren != 2 {
		t.Fatalf("root stat = %+v, want cversion 0 with 2 children", root)
	}
}

func TestParentEffects(t *testing.T) {
	e := newEnv(t)
	e.create("/p", nil)
	mz := e.tree.Node("/p").Persisted()
	// A txn from an old log: parentCversion -1 means "increment".
	e.mustApply(zkproto.OpCreate, &txn.Create{Path: "/p/v0", ParentCversion: -1, V0: true})
	e.mustApply(zkproto.OpCreate, &txn.Create{Path: "/p/x", ParentCversion: 7})
	p := e.tree.Node("/p").Persisted()
	if p.Cversion != 7 || p.Pzxid != e.zxid() || p.Mzxid != mz.Mzxid || p.Mtime != mz.Mtime || p.Version != 0 {
		t.Fatalf("parent = %+v", p)
	}
	if got := e.tree.ACL(e.tree.Node("/p/v0")); !reflect.DeepEqual(got, zkproto.OpenACLUnsafe) {
		t.Fatalf("null ACL list reads as %v", got)
	}
}

func TestSetDataAndSetACL(t *testing.T) {
	e := newEnv(t)
	e.create("/s", []byte("a"))
	res, ch := e.mustApply(zkproto.OpSetData, &txn.SetData{Path: "/s", Data: nil, Version: 1})
	z := e.zxid()
	if want := changes(dataChg, "/s"); !reflect.DeepEqual(withoutACL(ch), want) {
		t.Fatalf("changes = %v", ch)
	}
	if res.Stat.Version != 1 || res.Stat.Mzxid != z || res.Stat.Mtime != baseTime+2 || res.Stat.DataLength != 0 || res.Stat.Czxid == z {
		t.Fatalf("stat = %+v", res.Stat)
	}
	if e.tree.Node("/s").Data() != nil {
		t.Fatal("null data not kept")
	}
	// Txns carry the new version; Apply stores it as given, including the
	// wrapped values the prep stage computes.
	for _, v := range []int32{2147483647, -2147483648, -2, 0} {
		res, _ = e.mustApply(zkproto.OpSetData, &txn.SetData{Path: "/s", Data: []byte{}, Version: v})
		if res.Stat.Version != v {
			t.Fatalf("version = %d, want %d", res.Stat.Version, v)
		}
	}
	before := e.tree.Node("/s").Persisted()
	res, ch = e.mustApply(zkproto.OpSetACL, &txn.SetACL{Path: "/s", ACL: digestACL, Version: 1})
	if len(ch) != 0 {
		t.Fatalf("setACL changes = %v", ch)
	}
	after := e.tree.Node("/s").Persisted()
	if after.Aversion != 1 || after.Mzxid != before.Mzxid || after.Version != before.Version {
		t.Fatalf("setACL stat %+v -> %+v", before, after)
	}
	if res.Stat.Aversion != 1 || !reflect.DeepEqual(e.tree.ACL(e.tree.Node("/s")), digestACL) {
		t.Fatalf("setACL result %+v acl %v", res.Stat, e.tree.ACL(e.tree.Node("/s")))
	}
	// reconfig is a setData on /zookeeper/config.
	res, ch = e.mustApply(zkproto.OpReconfig, &txn.SetData{Path: ConfigPath, Data: []byte("server.1=x"), Version: 1})
	if res.Op != zkproto.OpReconfig || !reflect.DeepEqual(withoutACL(ch), changes(dataChg, ConfigPath)) {
		t.Fatalf("reconfig result %+v changes %v", res, ch)
	}
	// setData on the root, by either name, keeps the digest consistent.
	e.mustApply(zkproto.OpSetData, &txn.SetData{Path: "", Data: []byte("r"), Version: 1})
	if string(e.tree.Node("/").Data()) != "r" {
		t.Fatal("root data not set")
	}
}

func TestACLCacheRefcounts(t *testing.T) {
	e := newEnv(t)
	e.create("/a", nil)
	e.create("/b", nil)
	refA, refB := e.tree.Node("/a").aclRef, e.tree.Node("/b").aclRef
	if refA != refB || refA != 2 || e.tree.ACLCacheSize() != 2 {
		t.Fatalf("refs %d %d, cache size %d; want shared ref 2 and 2 entries", refA, refB, e.tree.ACLCacheSize())
	}
	e.mustApply(zkproto.OpDelete, &txn.Delete{Path: "/a"})
	if e.tree.ACLCacheSize() != 2 {
		t.Fatal("entry dropped while /b still uses it")
	}
	e.mustApply(zkproto.OpDelete, &txn.Delete{Path: "/b"})
	if e.tree.ACLCacheSize() != 1 {
		t.Fatal("entry kept after its last user went")
	}
	e.create("/c", nil)
	if got := e.tree.Node("/c").aclRef; got != 3 {
		t.Fatalf("ref = %d, want 3: references are never reused", got)
	}
	// Re-setting the same list releases first, so the node gets a new ref.
	e.mustApply(zkproto.OpSetACL, &txn.SetACL{Path: "/c", ACL: worldAll, Version: 1})
	if got := e.tree.Node("/c").aclRef; got != 4 {
		t.Fatalf("ref after setACL = %d, want 4", got)
	}
	// An empty (non-null) list is an ordinary entry, distinct from null.
	e.mustApply(zkproto.OpCreate, &txn.Create{Path: "/e", ACL: []zkproto.ACL{}, ParentCversion: 5})
	if n := e.tree.Node("/e"); n.aclRef < 1 || e.tree.ACL(n) == nil || len(e.tree.ACL(n)) != 0 {
		t.Fatalf("empty ACL list: ref %d acl %#v", n.aclRef, e.tree.ACL(n))
	}
}

func TestApplyErrors(t *testing.T) {
	tests := []struct {
		name string
		op   zkproto.Op
		rec  jute.Record
		want error
	}{
		{"create without parent", zkproto.OpCreate, &txn.Create{Path: "/x/y", ParentCversion: 1}, zkproto.ErrNoNode},
		{"create existing", zkproto.OpCreate, &txn.Create{Path: "/a", ParentCversion: 1}, zkproto.ErrNodeExists},
		{"create root", zkproto.OpCreate, &txn.Create{Path: "/", ParentCversion: 1}, zkproto.ErrBadArguments},
		{"create trailing slash", zkproto.OpCreate, &txn.Create{Path: "/a/", ParentCversion: 1}, zkproto.ErrBadArguments},
		{"create relative", zkproto.OpCreate2, &txn.Create{Path: "a", ParentCversion: 1}, zkproto.ErrBadArguments},
		{"create double slash", zkproto.OpCreate, &txn.Create{Path: "/a//b", ParentCversion: 1}, zkproto.ErrBadArguments},
		{"bad ttl", zkproto.OpCreateTTL, &txn.CreateTTL{Path: "/t", ParentCversion: 1, TTL: 0}, zkproto.ErrBadArguments},
		{"delete missing", zkproto.OpDelete, &txn.Delete{Path: "/nope"}, zkproto.ErrNoNode},
		{"delete root", zkproto.OpDelete, &txn.Delete{Path: "/"}, zkproto.ErrBadArguments},
		{"setData missing", zkproto.OpSetData, &txn.SetData{Path: "/nope", Version: 1}, zkproto.ErrNoNode},
		{"setACL missing", zkproto.OpSetACL, &txn.SetACL{Path: "/nope", Version: 1}, zkproto.ErrNoNode},
		{"error txn", zkproto.OpError, &txn.Error{Err: int32(zkproto.CodeNodeExists)}, zkproto.ErrNodeExists},
		{"record mismatch", zkproto.OpCreate, &txn.Delete{Path: "/a"}, zkproto.ErrMarshallingError},
		{"unknown type", zkproto.OpGetData, &txn.Delete{Path: "/a"}, zkproto.ErrMarshallingError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.create("/a", nil)
			e.create("/a/b", nil)
			before := snapshotOf(t, e.tree)
			res, ch := e.apply(tc.op, tc.rec)
			if !errors.Is(res.Err, tc.want) {
				t.Fatalf("err = %v, want %v", res.Err, tc.want)
			}
			if len(ch) != 0 {
				t.Fatalf("changes = %v", ch)
			}
			if tc.op != zkproto.OpDelete && tc.name != "create existing" {
				if d := diffTrees(before, e.tree); d != "" {
					t.Fatalf("tree changed:\n%s", d)
				}
			}
			if int64(e.tree.LastZxid()) != e.zxid() {
				t.Fatalf("LastZxid = %v, want %#x", e.tree.LastZxid(), e.zxid())
			}
		})
	}
}

func TestDeleteMissingRaisesParentPzxid(t *testing.T) {
	e := newEnv(t)
	e.create("/p", nil)
	e.apply(zkproto.OpDelete, &txn.Delete{Path: "/p/gone"})
	if got := e.tree.Node("/p").Persisted().Pzxid; got != e.zxid() {
		t.Fatalf("pzxid = %#x, want %#x (raised like Java)", got, e.zxid())
	}
	// Never lowered: an older zxid leaves it.
	hdr := e.next(zkproto.OpDelete, sess1)
	hdr.Zxid = 1
	e.tree.Apply(&txn.Txn{Header: hdr, Record: &txn.Delete{Path: "/p/gone"}})
	if got := e.tree.Node("/p").Persisted().Pzxid; got == 1 {
		t.Fatal("pzxid lowered")
	}
	e.check()
}

// withoutACL drops the ACLs from changes, for tests about types and paths.
func withoutACL(chs []Change) []Change {
	out := make([]Change, len(chs))
	for i, c := range chs {
		out[i] = Change{Type: c.Type, Path: c.Path}
	}
	return out
}

// Every change carries the ACL its event is filtered by: the node's, or
// the parent's for NodeChildrenChanged.
func TestChangesCarryACL(t *testing.T) {
	tr := New()
	secret := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.ID{Scheme: "digest", ID: "u:h"}}}
	_, ch := tr.Apply(&txn.Txn{Header: txn.Header{Zxid: 1, Type: zkproto.OpCreate},
		Record: &txn.Create{Path: "/s", ACL: secret, ParentCversion: 1}})
	if len(ch) != 2 || !reflect.DeepEqual(ch[0].ACL, secret) || !reflect.DeepEqual(ch[1].ACL, zkproto.OpenACLUnsafe) {
		t.Fatalf("create changes %+v", ch)
	}
	_, ch = tr.Apply(&txn.Txn{Header: txn.Header{Zxid: 2, Type: zkproto.OpDelete}, Record: &txn.Delete{Path: "/s"}})
	if len(ch) != 2 || !reflect.DeepEqual(ch[0].ACL, secret) {
		t.Fatalf("delete changes %+v", ch)
	}
}
