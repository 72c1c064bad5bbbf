package snap

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"keeper/coordination/datatree"
	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

const baseTime int64 = 1700000000000

var (
	worldAll  = []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.ID{Scheme: "world", ID: "anyone"}}}
	digestACL = []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.ID{Scheme: "digest", ID: "bob:Ydbx3gwn7rmwFiRPd6yIiXWMaG8="}}}
)

// builder applies txns with zxids 0x100000001, 0x100000002, ... to a tree,
// deriving the post-validation values (parent cversion, versions) the way
// the prep stage does.
type builder struct {
	t    testing.TB
	tree *datatree.Tree
	n    uint32
}

func newBuilder(t testing.TB) *builder { return &builder{t: t, tree: datatree.New()} }

func (b *builder) apply(session int64, op zkproto.Op, rec jute.Record) {
	b.t.Helper()
	b.n++
	h := txn.Header{ClientID: session, Cxid: int32(b.n), Zxid: zxid.Make(1, b.n), Time: baseTime + int64(b.n), Type: op}
	if res, _ := b.tree.Apply(&txn.Txn{Header: h, Record: rec}); res.Err != nil {
		b.t.Fatalf("apply %v %+v: %v", op, rec, res.Err)
	}
}

func (b *builder) parentCversion(path string) int32 {
	i := strings.LastIndexByte(path, '/')
	parent := path[:i]
	if parent == "" {
		parent = "/"
	}
	return b.tree.Node(parent).Persisted().Cversion + 1
}

// kind is how create makes a node.
type kind int

const (
	persistent kind = iota
	ephemeral
	container
	ttl
)

func (b *builder) create(session int64, k kind, path string, data []byte, acl []zkproto.ACL) {
	b.t.Helper()
	pcv := b.parentCversion(path)
	switch k {
	case persistent:
		b.apply(session, zkproto.OpCreate, &txn.Create{Path: path, Data: data, ACL: acl, ParentCversion: pcv})
	case ephemeral:
		b.apply(session, zkproto.OpCreate2, &txn.Create{Path: path, Data: data, ACL: acl, Ephemeral: true, ParentCversion: pcv})
	case container:
		b.apply(session, zkproto.OpCreateContainer, &txn.CreateContainer{Path: path, Data: data, ACL: acl, ParentCversion: pcv})
	case ttl:
		b.apply(session, zkproto.OpCreateTTL, &txn.CreateTTL{Path: path, Data: data, ACL: acl, ParentCversion: pcv, TTL: datatree.MaxTTL})
	}
}

func (b *builder) setData(path string, data []byte) {
	b.t.Helper()
	b.apply(0, zkproto.OpSetData, &txn.SetData{Path: path, Data: data, Version: b.tree.Node(path).Persisted().Version + 1})
}

func (b *builder) setACL(path string, acl []zkproto.ACL) {
	b.t.Helper()
	b.apply(0, zkproto.OpSetACL, &txn.SetACL{Path: path, ACL: acl, Version: b.tree.Node(path).Persisted().Aversion + 1})
}

func (b *builder) delete(path string) {
	b.t.Helper()
	b.apply(0, zkproto.OpDelete, &txn.Delete{Path: path})
}

// smallTree is a fixed tree with one node of every kind, null and empty
// data, and three ACL lists.
func smallTree(t testing.TB) (*datatree.Tree, []SessionEntry) {
	b := newBuilder(t)
	const s1, s2 = 0x0100000000000005, 0x0100000000000006
	b.create(s1, persistent, "/app", []byte("hello"), worldAll)
	b.create(s1, persistent, "/app/null", nil, worldAll)
	b.create(s1, persistent, "/app/empty", []byte{}, digestACL)
	b.create(s1, ephemeral, "/app/eph", []byte("e"), worldAll)
	b.create(s2, container, "/box", nil, zkproto.ReadACLUnsafe)
	b.create(s2, persistent, "/box/item", []byte("i"), worldAll)
	b.create(s2, ttl, "/ttl", []byte("t"), worldAll)
	b.setData("/app", []byte("hello again"))
	b.setACL("/app/null", digestACL)
	return b.tree, []SessionEntry{{ID: s2, TimeoutMs: 4000}, {ID: s1, TimeoutMs: 30000}}
}

// randomTree builds a tree from about ops random txns: every node kind,
// sequential names, null, empty and random data, many ACL lists, setData,
// setACL and deletes.
func randomTree(t testing.TB, seed uint64, ops int) (*datatree.Tree, []SessionEntry) {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := newBuilder(t)
	sessions := []SessionEntry{{ID: 0x0100000000000001, TimeoutMs: 6000}, {ID: 0x0100000000000002, TimeoutMs: 40000}}
	var acls [][]zkproto.ACL
	for i := range 40 {
		acls = append(acls, []zkproto.ACL{{Perms: int32(1 + i%31), ID: zkproto.ID{Scheme: "digest", ID: fmt.Sprintf("u%d:x", i)}}})
	}
	acls = append(acls, worldAll, digestACL, zkproto.ReadACLUnsafe, append(slices.Clone(worldAll), digestACL...))
	paths := []string{"/"}
	for range ops {
		parent := paths[rng.IntN(len(paths))]
		node := b.tree.Node(parent)
		switch r := rng.IntN(10); {
		case node == nil:
		case r < 6 && !node.IsEphemeral() && strings.Count(parent, "/") < 6 && !strings.HasPrefix(parent, "/zookeeper"):
			name := fmt.Sprintf("n%d", rng.IntN(6))
			if rng.IntN(3) == 0 {
				name = fmt.Sprintf("seq%010d", node.Persisted().Cversion)
			}
			path := strings.TrimSuffix(parent, "/") + "/" + name
			if b.tree.Node(path) != nil {
				continue
			}
			s := sessions[rng.IntN(len(sessions))].ID
			b.create(s, kind(rng.IntN(4)), path, randomData(rng), acls[rng.IntN(len(acls))])
			paths = append(paths, path)
		case r < 8:
			b.setData(parent, randomData(rng))
		case r < 9 && parent != "/":
			b.setACL(parent, acls[rng.IntN(len(acls))])
		case parent != "/" && node.NumChildren() == 0:
			b.delete(parent)
			paths = slices.DeleteFunc(paths, func(p string) bool { return p == parent })
		}
	}
	return b.tree, sessions
}

func randomData(rng *rand.Rand) []byte {
	switch rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	b := make([]byte, rng.IntN(64))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// diffTrees compares everything observable about two trees and returns ""
// if they match.
func diffTrees(a, b *datatree.Tree) string {
	var out []string
	stack := []string{"/"}
	for len(stack) > 0 {
		path := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		na, nb := a.Node(path), b.Node(path)
		if nb == nil {
			out = append(out, "only in first: "+path)
			continue
		}
		if (na.Data() == nil) != (nb.Data() == nil) || !bytes.Equal(na.Data(), nb.Data()) {
			out = append(out, fmt.Sprintf("%s: data %q vs %q", path, na.Data(), nb.Data()))
		}
		if na.Persisted() != nb.Persisted() {
			out = append(out, fmt.Sprintf("%s: stat %+v vs %+v", path, na.Persisted(), nb.Persisted()))
		}
		if !reflect.DeepEqual(a.ACL(na), b.ACL(nb)) {
			out = append(out, fmt.Sprintf("%s: acl %v vs %v", path, a.ACL(na), b.ACL(nb)))
		}
		if !slices.Equal(na.Children(), nb.Children()) {
			out = append(out, fmt.Sprintf("%s: children %v vs %v", path, na.Children(), nb.Children()))
		}
		for _, c := range na.Children() {
			stack = append(stack, strings.TrimSuffix(path, "/")+"/"+c)
		}
	}
	if a.NodeCount() != b.NodeCount() {
		out = append(out, fmt.Sprintf("node count %d vs %d", a.NodeCount(), b.NodeCount()))
	}
	if a.Digest() != b.Digest() || a.ApproximateDataSize() != b.ApproximateDataSize() || a.ACLCacheSize() != b.ACLCacheSize() {
		out = append(out, fmt.Sprintf("digest/size/acls %d/%d/%d vs %d/%d/%d", a.Digest(), a.ApproximateDataSize(),
			a.ACLCacheSize(), b.Digest(), b.ApproximateDataSize(), b.ACLCacheSize()))
	}
	if !slices.Equal(a.EphemeralSessions(), b.EphemeralSessions()) || !slices.Equal(a.Containers(), b.Containers()) ||
		!slices.Equal(a.TTLNodes(), b.TTLNodes()) {
		out = append(out, "owner sets differ")
	}
	return strings.Join(out, "\n")
}

// bodyOf returns the tree's snapshot body.
func bodyOf(t testing.TB, tree *datatree.Tree) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := tree.WriteBody(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// digestOf is the digest record keeper writes for tree at z.
func digestOf(tree *datatree.Tree, z zxid.ID) *Digest {
	return &Digest{Zxid: z, Version: datatree.DigestVersion, TreeDigest: tree.Digest()}
}

// writeSnap writes tree's snapshot at its last zxid into dir of fs.
func writeSnap(t testing.TB, fs *testFS, dir string, tree *datatree.Tree, sessions []SessionEntry, opts Options) string {
	t.Helper()
	z := tree.LastZxid()
	name, err := Write(fs, dir, z, sessions, tree, digestOf(tree, z), opts)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return name
}
