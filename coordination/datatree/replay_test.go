package datatree

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
)

// TestReplaySameTxnTwice: re-applying a create or a delete, as replaying
// the log after a fuzzy snapshot does, reports NodeExists / NoNode and
// leaves the tree as it was.
func TestReplaySameTxnTwice(t *testing.T) {
	e := newEnv(t)
	e.create("/p", nil)
	create := &txn.Txn{Header: e.next(zkproto.OpCreate, sess1),
		Record: &txn.Create{Path: "/p/c", Data: []byte("x"), ACL: worldAll, ParentCversion: 1}}
	e.tree.Apply(create)
	after := snapshotOf(t, e.tree)
	res, ch := e.tree.Apply(create)
	if !errors.Is(res.Err, zkproto.ErrNodeExists) || len(ch) != 0 {
		t.Fatalf("second create: %v %v", res.Err, ch)
	}
	if d := diffTrees(after, e.tree); d != "" {
		t.Fatalf("second create changed the tree:\n%s", d)
	}
	del := &txn.Txn{Header: e.next(zkproto.OpDelete, sess1), Record: &txn.Delete{Path: "/p/c"}}
	e.tree.Apply(del)
	after = snapshotOf(t, e.tree)
	res, ch = e.tree.Apply(del)
	if !errors.Is(res.Err, zkproto.ErrNoNode) || len(ch) != 0 {
		t.Fatalf("second delete: %v %v", res.Err, ch)
	}
	if d := diffTrees(after, e.tree); d != "" {
		t.Fatalf("second delete changed the tree:\n%s", d)
	}
	e.check()
}

// TestReplayCreateRaisesParent: a create that finds its node already there
// (the snapshot was taken after it) still raises the parent's cversion and
// pzxid when the snapshot's parent is older than the txn.
func TestReplayCreateRaisesParent(t *testing.T) {
	e := newEnv(t)
	e.create("/p", nil)
	e.create("/p/c", nil)
	// Simulate a snapshot that caught /p/c but an older /p.
	p := e.tree.Node("/p")
	p.stat.Cversion, p.stat.Pzxid = 0, 0
	e.tree.rehash("/p", p)
	res, _ := e.apply(zkproto.OpCreate2, &txn.Create{Path: "/p/c", ACL: digestACL, ParentCversion: 1})
	if !errors.Is(res.Err, zkproto.ErrNodeExists) {
		t.Fatalf("err = %v", res.Err)
	}
	if got := p.Persisted(); got.Cversion != 1 || got.Pzxid != e.zxid() {
		t.Fatalf("parent = %+v, want cversion 1 pzxid %#x", got, e.zxid())
	}
	// As in Java, the existing node takes the txn's ACL.
	if got := e.tree.ACL(e.tree.Node("/p/c")); len(got) != 1 || got[0].ID.Scheme != "digest" {
		t.Fatalf("acl = %v", got)
	}
	// A lower cversion never lowers it.
	e.apply(zkproto.OpCreate, &txn.Create{Path: "/p/c", ParentCversion: 0})
	if got := p.Persisted(); got.Cversion != 1 {
		t.Fatalf("cversion lowered to %d", got.Cversion)
	}
}

// TestReplayDeleteOfNonEmptyNode: during a fuzzy replay a delete can meet a
// later incarnation of its node that has children; the subtree goes,
// deepest first, and later txns re-create it.
func TestReplayDeleteOfNonEmptyNode(t *testing.T) {
	e := newEnv(t)
	e.create("/a", nil)
	e.create("/a/b", nil)
	e.mustApply(zkproto.OpCreate, &txn.Create{Path: "/a/b/c", Ephemeral: true, ParentCversion: 1})
	e.create("/a/d", []byte("x"))
	_, ch := e.mustApply(zkproto.OpDelete, &txn.Delete{Path: "/a"})
	want := changes(deleted, "/a/b/c", childChg, "/a/b", deleted, "/a/d", childChg, "/a",
		deleted, "/a/b", childChg, "/a", deleted, "/a", childChg, "/")
	if !reflect.DeepEqual(withoutACL(ch), want) {
		t.Fatalf("changes =\n%v\nwant\n%v", ch, want)
	}
	if e.tree.NodeCount() != 5 || e.tree.EphemeralCount() != 0 || e.tree.ACLCacheSize() != 1 {
		t.Fatalf("left: %d nodes, %d ephemerals, %d ACLs", e.tree.NodeCount(), e.tree.EphemeralCount(), e.tree.ACLCacheSize())
	}
	if d := diffTrees(New(), e.tree); !strings.HasPrefix(d, "/: stat") || strings.Contains(d, "only in") {
		t.Fatalf("tree differs from a fresh one by more than the root stat:\n%s", d)
	}
}

// TestReplaySuffixConverges is the fuzzy-snapshot property: applying a
// sequence and then re-applying any suffix of it ends in the same tree as
// applying it once (up to ACL reference numbers). Every txn also goes
// through txn.Marshal/Unmarshal, as the log would carry it.
func TestReplaySuffixConverges(t *testing.T) {
	for seed := range uint64(30) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			g := newGen(seed)
			seq := roundTripTxns(t, g.sequence(300))
			once := New()
			for _, tx := range seq {
				once.Apply(tx)
			}
			if d := diffTrees(g.tree, once); d != "" {
				t.Fatalf("encoded txns applied differently:\n%s", d)
			}
			if err := checkTree(once); err != "" {
				t.Fatal(err)
			}
			for _, k := range []int{0, int(seed) * 7 % len(seq), len(seq) - 1} {
				twice := cloneTree(once)
				for _, tx := range seq[k:] {
					twice.Apply(tx)
				}
				if err := checkTree(twice); err != "" {
					t.Fatal(err)
				}
				if d := diffTrees(once, twice); d != "" {
					t.Fatalf("re-applying from txn %d diverged:\n%s", k, d)
				}
			}
		})
	}
}

func roundTripTxns(t *testing.T, seq []*txn.Txn) []*txn.Txn {
	out := make([]*txn.Txn, len(seq))
	for i, tx := range seq {
		back, err := txn.Unmarshal(txn.Marshal(tx), 0)
		if err != nil {
			t.Fatalf("txn %d (%v): %v", i, tx.Header.Type, err)
		}
		out[i] = back
	}
	return out
}

// TestLegacyCloseReplayStaysConsistent: closeSession records without a body
// (pre-3.6) cannot be replayed idempotently, in Java either, but the tree
// must stay internally consistent.
func TestLegacyCloseReplayStaysConsistent(t *testing.T) {
	for seed := range uint64(10) {
		g := newGen(seed)
		g.legacyClose = true
		seq := g.sequence(300)
		tree := cloneTree(g.tree)
		for _, tx := range seq {
			tree.Apply(tx)
		}
		if err := checkTree(tree); err != "" {
			t.Fatalf("seed %d: %s", seed, err)
		}
		if d := diffTrees(tree, cloneTree(tree)); d != "" {
			t.Fatalf("seed %d: snapshot round trip:\n%s", seed, d)
		}
	}
}
