package datatree

import (
	"reflect"
	"slices"
	"testing"

	"keeper/coordination/zkproto"
)

func TestNew(t *testing.T) {
	tree := New()
	tests := []struct {
		path     string
		acl      []zkproto.ACL
		aversion int32
		children []string
	}{
		{"/", zkproto.OpenACLUnsafe, 0, []string{"zookeeper"}},
		{"/zookeeper", zkproto.OpenACLUnsafe, 0, []string{"config", "quota"}},
		{"/zookeeper/quota", zkproto.OpenACLUnsafe, 0, nil},
		{"/zookeeper/config", zkproto.ReadACLUnsafe, -1, nil},
	}
	for _, tc := range tests {
		n := tree.Node(tc.path)
		if n == nil {
			t.Fatalf("%s missing", tc.path)
		}
		if n.Data() == nil || len(n.Data()) != 0 {
			t.Errorf("%s data = %#v, want empty non-nil", tc.path, n.Data())
		}
		if want := (zkproto.StatPersisted{Aversion: tc.aversion}); n.Persisted() != want {
			t.Errorf("%s stat = %+v, want %+v", tc.path, n.Persisted(), want)
		}
		if !reflect.DeepEqual(tree.ACL(n), tc.acl) {
			t.Errorf("%s acl = %v, want %v", tc.path, tree.ACL(n), tc.acl)
		}
		if !slices.Equal(n.Children(), tc.children) {
			t.Errorf("%s children = %v, want %v", tc.path, n.Children(), tc.children)
		}
	}
	if tree.Node("") != tree.Node("/") {
		t.Error(`Node("") is not the root`)
	}
	// Root quirk: "zookeeper" was never created, so stored cversion 0 and
	// one child give a visible cversion of -1.
	if got := tree.Node("/").Stat().Cversion; got != -1 {
		t.Errorf("fresh root visible cversion = %d, want -1", got)
	}
	if got := tree.NodeCount(); got != 5 {
		t.Errorf("NodeCount = %d, want 5", got)
	}
	if got := tree.ApproximateDataSize(); got != 44 {
		t.Errorf("ApproximateDataSize = %d, want 44 (0+1+10+16+17)", got)
	}
	if got := tree.ACLCacheSize(); got != 1 {
		t.Errorf("ACLCacheSize = %d, want 1", got)
	}
	if got := tree.nodes[ConfigPath].aclRef; got != 1 {
		t.Errorf("config ACL ref = %d, want 1", got)
	}
	if got := tree.Digest(); got != 1371985504 {
		t.Errorf("fresh digest = %d, want 1371985504", got)
	}
}

// TestDigestVector checks the digest of a small tree against a value
// computed independently (Python zlib.crc32 over path, data and the
// 60-byte big-endian stat, /zookeeper/ subtree excluded).
func TestDigestVector(t *testing.T) {
	e := newEnv(t)
	e.create("/a", []byte("hello"))
	e.mustApply(zkproto.OpCreate, &txnCreate{Path: "/a/e", ACL: worldAll, Ephemeral: true, ParentCversion: 1})
	if got, want := e.tree.Digest(), int64(5650486848); got != want {
		t.Fatalf("digest = %d, want %d", got, want)
	}
	if got := e.tree.ComputeDigest(); got != 5650486848 {
		t.Fatalf("ComputeDigest = %d", got)
	}
}

func TestCountsSpecExample(t *testing.T) {
	// docs/zookeeper-protocol.md §2.4: with /a, /a/x and /a/y, "/" counts 6 and /zookeeper 2.
	e := newEnv(t)
	e.create("/a", nil)
	e.create("/a/x", nil)
	e.create("/a/y", []byte("12"))
	for path, want := range map[string]int{"/": 6, "": 6, "/zookeeper": 2, "/a": 2, "/a/x": 0, "/missing": 0} {
		if got := e.tree.CountDescendants(path); got != want {
			t.Errorf("CountDescendants(%q) = %d, want %d", path, got, want)
		}
	}
	if got := e.tree.NodeCount(); got != 8 {
		t.Errorf("NodeCount = %d, want 8", got)
	}
	if got := e.tree.ApproximateDataSize(); got != 44+2+4+4+2 {
		t.Errorf("ApproximateDataSize = %d, want %d", got, 44+2+4+4+2)
	}
}

func TestApproximateDataSizeCountsRootDataTwice(t *testing.T) {
	e := newEnv(t)
	e.mustApply(zkproto.OpSetData, &txnSetData{Path: "/", Data: []byte("abc"), Version: 1})
	if got := e.tree.ApproximateDataSize(); got != 44+6 {
		t.Fatalf("ApproximateDataSize = %d, want 50", got)
	}
	e.create("/é", nil) // 2 UTF-8 bytes, 2 UTF-16 units
	if got := e.tree.ApproximateDataSize(); got != 52 {
		t.Fatalf("ApproximateDataSize = %d, want 52", got)
	}
}

func TestOwnerEncodings(t *testing.T) {
	ttlOwner, ok := TTLOwner(60000)
	if !ok || uint64(ttlOwner) != 0xFF0000000000EA60 {
		t.Fatalf("TTLOwner(60000) = %#x, %v", uint64(ttlOwner), ok)
	}
	for _, bad := range []int64{0, -1, MaxTTL + 1} {
		if _, ok := TTLOwner(bad); ok {
			t.Errorf("TTLOwner(%d) accepted", bad)
		}
	}
	tests := []struct {
		owner int64
		want  kind
	}{
		{0, kindPersistent},
		{sess1, kindEphemeral},
		{ContainerOwner, kindContainer},
		{ttlOwner, kindTTL},
		{int64(-0x100000000000000), kindTTL},     // 0xFF00...00: ttl 0 still reads as TTL
		{u64(0xFF00010000000005), kindEphemeral}, // unknown feature code
		{u64(0x800000000000EA60), kindEphemeral}, // legacy 3.5.3 TTL form: not recognised
		{u64(0xFE00000000000001), kindEphemeral}, // session of server 254
	}
	for _, tc := range tests {
		if got := kindOf(tc.owner); got != tc.want {
			t.Errorf("kindOf(%#x) = %d, want %d", uint64(tc.owner), got, tc.want)
		}
	}
}
