package datatree

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

const (
	sess1    int64 = 0x0100000000000005
	sess2    int64 = 0x0100000000000006
	baseTime int64 = 1700000000000
)

var (
	worldAll  = []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.ID{Scheme: "world", ID: "anyone"}}}
	digestACL = []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.ID{Scheme: "digest", ID: "u:h"}}}
)

// env applies txns with consecutive zxids 0x100000001, 0x100000002, ...
// and times baseTime+1, baseTime+2, ...
type env struct {
	t    testing.TB
	tree *Tree
	n    uint32
	// bulk skips the whole-tree check after each txn while a test builds
	// a large tree; the test checks once at the end. The check walks
	// every node, so after every one of n creates it costs O(n²).
	bulk bool
}

func newEnv(t testing.TB) *env { return &env{t: t, tree: New()} }

// next returns the header of the next txn.
func (e *env) next(op zkproto.Op, session int64) txn.Header {
	e.n++
	return txn.Header{ClientID: session, Cxid: int32(e.n), Zxid: zxid.Make(1, e.n), Time: baseTime + int64(e.n), Type: op}
}

func (e *env) apply(op zkproto.Op, rec jute.Record) (Result, []Change) {
	return e.applyAs(sess1, op, rec)
}

func (e *env) applyAs(session int64, op zkproto.Op, rec jute.Record) (Result, []Change) {
	e.t.Helper()
	res, ch := e.tree.Apply(&txn.Txn{Header: e.next(op, session), Record: rec})
	e.check()
	return res, ch
}

// mustApply applies and fails the test on an error result.
func (e *env) mustApply(op zkproto.Op, rec jute.Record) (Result, []Change) {
	e.t.Helper()
	res, ch := e.apply(op, rec)
	if res.Err != nil {
		e.t.Fatalf("apply %v %+v: %v", op, rec, res.Err)
	}
	return res, ch
}

// create makes a persistent node with the parent's next cversion.
func (e *env) create(path string, data []byte) Result {
	e.t.Helper()
	res, _ := e.mustApply(zkproto.OpCreate, &txn.Create{Path: path, Data: data, ACL: worldAll,
		ParentCversion: e.parentCversion(path) + 1})
	return res
}

func (e *env) parentCversion(path string) int32 {
	parent, _, ok := splitPath(path)
	if !ok || e.tree.Node(parent) == nil {
		return 0
	}
	return e.tree.Node(parent).Persisted().Cversion
}

func (e *env) zxid() int64 { return int64(zxid.Make(1, e.n)) }

// check verifies the incrementally kept digest and size.
func (e *env) check() {
	e.t.Helper()
	if e.bulk {
		return
	}
	if err := checkTree(e.tree); err != "" {
		e.t.Fatal(err)
	}
}

func checkTree(t *Tree) string {
	if d, c := t.Digest(), t.ComputeDigest(); d != c {
		return fmt.Sprintf("digest %d, recomputed %d", d, c)
	}
	var size int64
	for path, n := range t.nodes {
		size += sizeOf(path, n.data)
	}
	if size+t.quotaDrift != t.dataSize {
		return fmt.Sprintf("data size %d, recomputed %d + quota drift %d", t.dataSize, size, t.quotaDrift)
	}
	return ""
}

// diffTrees compares everything observable about two trees except ACL
// reference numbers, and returns "" if they match.
func diffTrees(a, b *Tree) string {
	var out []string
	for _, path := range slices.Sorted(maps.Keys(a.nodes)) {
		na, nb := a.nodes[path], b.nodes[path]
		if nb == nil {
			out = append(out, "only in first: "+path)
			continue
		}
		if (na.data == nil) != (nb.data == nil) || string(na.data) != string(nb.data) {
			out = append(out, fmt.Sprintf("%s: data %q vs %q", path, na.data, nb.data))
		}
		if na.stat != nb.stat {
			out = append(out, fmt.Sprintf("%s: stat %+v vs %+v", path, na.stat, nb.stat))
		}
		if !slices.Equal(na.Children(), nb.Children()) {
			out = append(out, fmt.Sprintf("%s: children %v vs %v", path, na.Children(), nb.Children()))
		}
		if !reflect.DeepEqual(a.ACL(na), b.ACL(nb)) {
			out = append(out, fmt.Sprintf("%s: acl %v vs %v", path, a.ACL(na), b.ACL(nb)))
		}
	}
	for path := range b.nodes {
		if a.nodes[path] == nil {
			out = append(out, "only in second: "+path)
		}
	}
	if !reflect.DeepEqual(a.ephemerals, b.ephemerals) || !reflect.DeepEqual(a.containers, b.containers) ||
		!reflect.DeepEqual(a.ttls, b.ttls) {
		out = append(out, "owner sets differ")
	}
	if a.Digest() != b.Digest() || a.ApproximateDataSize() != b.ApproximateDataSize() || a.ACLCacheSize() != b.ACLCacheSize() {
		out = append(out, fmt.Sprintf("digest/size/acls %d/%d/%d vs %d/%d/%d", a.Digest(), a.ApproximateDataSize(),
			a.ACLCacheSize(), b.Digest(), b.ApproximateDataSize(), b.ACLCacheSize()))
	}
	return strings.Join(out, "\n")
}

// Short names for the records the tests build most.
type (
	txnCreate  = txn.Create
	txnSetData = txn.SetData
)

// u64 reinterprets an unsigned constant as the int64 the wire carries.
func u64(x uint64) int64 { return int64(x) }

// snapshotOf deep-copies a tree through WriteBody and ReadBody.
func snapshotOf(t testing.TB, tree *Tree) *Tree {
	t.Helper()
	back, err := copyTree(tree)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func copyTree(tree *Tree) (*Tree, error) {
	var buf bytes.Buffer
	if err := tree.WriteBody(&buf); err != nil {
		return nil, err
	}
	back, err := ReadBody(&buf, 0)
	if err != nil {
		return nil, err
	}
	back.SetLastZxid(tree.LastZxid())
	return back, nil
}

// cloneTree is snapshotOf for code without a testing.TB; it panics on
// error, which the calling test reports.
func cloneTree(tree *Tree) *Tree {
	back, err := copyTree(tree)
	if err != nil {
		panic(err)
	}
	return back
}
