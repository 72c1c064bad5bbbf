package datatree

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
)

// fuzzyBody runs a whole walk, calling between after every step, and
// returns the body bytes as a snapshot would hold them.
func fuzzyBody(tree *Tree, stepNodes func() int, between func()) []byte {
	staged, _ := fuzzyBodies(tree, stepNodes, between)
	return staged
}

// fuzzyBodies runs a whole walk and returns the body with the ACL section
// of the lists the nodes used (staged) and, unless the walk was Late, the
// body with the leading ACL section, as a server streams it.
func fuzzyBodies(tree *Tree, stepNodes func() int, between func()) (staged, leading []byte) {
	return walkBodies(tree, tree.StartFuzzyBody(), stepNodes, between)
}

// walkBodies is fuzzyBodies for a walk already started.
func walkBodies(tree *Tree, f *FuzzyBody, stepNodes func() int, between func()) (staged, leading []byte) {
	var nodes []byte
	for done := false; !done; {
		done = f.Step(tree, stepNodes())
		nodes = append(nodes, f.Take()...)
		if !done {
			between()
		}
	}
	staged = append(append(f.ACLSection(), nodes...), EndMarker()...)
	if !f.Late() {
		leading = append(append(slices.Clone(f.LeadingACLSection()), nodes...), EndMarker()...)
	}
	return staged, leading
}

// On a tree that does not change, the fuzzy walk writes the same tree as
// WriteBody (in another order: it does not sort children).
func TestFuzzyBodyOfStillTree(t *testing.T) {
	g := newGen(7)
	g.sequence(300)
	var want bytes.Buffer
	if err := g.tree.WriteBody(&want); err != nil {
		t.Fatal(err)
	}
	got := fuzzyBody(g.tree, func() int { return 3 }, func() {})
	if len(got) != want.Len() {
		t.Fatalf("fuzzy body has %d bytes, WriteBody %d", len(got), want.Len())
	}
	tree, err := ReadBody(bytes.NewReader(got), 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffTrees(tree, g.tree); d != "" {
		t.Fatal(d)
	}
}

// A walk stopped half way releases its iterators.
// A walk in name order writes a still tree exactly as WriteBody does, and
// two such walks of the same tree, changed the same way between the same
// steps, write the same bytes: what it writes depends on no map order.
func TestFuzzyBodyInOrder(t *testing.T) {
	for _, seed := range []uint64{3, 11, 29} {
		g := newGen(seed)
		g.sequence(300)
		var want bytes.Buffer
		if err := g.tree.WriteBody(&want); err != nil {
			t.Fatal(err)
		}
		still, _ := walkBodies(g.tree, g.tree.StartFuzzyBodyInOrder(), func() int { return 4 }, func() {})
		if !bytes.Equal(still, want.Bytes()) {
			t.Fatalf("seed %d: in-order walk of a still tree differs from WriteBody (%d and %d bytes)", seed, len(still), want.Len())
		}
		var bodies [2][]byte
		for i := range bodies {
			g := newGen(seed)
			g.sequence(300)
			rng := rand.New(rand.NewPCG(seed, 2))
			bodies[i], _ = walkBodies(g.tree, g.tree.StartFuzzyBodyInOrder(), func() int { return 1 + rng.IntN(5) }, func() {
				g.sequence(rng.IntN(4))
			})
		}
		if !bytes.Equal(bodies[0], bodies[1]) {
			t.Fatalf("seed %d: two in-order walks under the same changes wrote different bodies", seed)
		}
	}
}

func TestFuzzyBodyAbort(t *testing.T) {
	g := newGen(8)
	g.sequence(200)
	f := g.tree.StartFuzzyBody()
	f.Step(g.tree, 10)
	f.Abort()
	if f.Step(g.tree, 10) != true {
		t.Fatal("an aborted walk is not done")
	}
}

// A body written while txns keep applying, plus the replay of every txn
// applied after the walk started, gives the tree as it ended.
func TestFuzzyBodyConverges(t *testing.T) {
	for seed := range uint64(80) {
		g := newGen(seed)
		g.sequence(250)
		rng := rand.New(rand.NewPCG(seed, 1))
		var later []*txn.Txn
		f := g.tree.StartFuzzyBody()
		if seed%2 == 1 {
			f = g.tree.StartFuzzyBodyInOrder()
		}
		staged, leading := walkBodies(g.tree, f, func() int { return 1 + rng.IntN(8) }, func() {
			later = append(later, g.sequence(rng.IntN(4))...)
		})
		for _, body := range [][]byte{staged, leading} {
			if body == nil {
				continue // a late walk: the leading section does not cover it
			}
			tree, err := ReadBody(bytes.NewReader(body), 0)
			if err != nil {
				t.Fatalf("seed %d: read fuzzy body: %v", seed, err)
			}
			for _, tx := range later {
				tree.Apply(tx)
			}
			if d := diffTrees(tree, g.tree); d != "" {
				t.Fatalf("seed %d: after replaying %d txns:\n%s", seed, len(later), d)
			}
		}
	}
}

// A node given an ACL list first cached during the walk makes it Late: the
// leading ACL section lacks its reference, so a body streamed after it
// cannot be read, and the staged body can.
func TestFuzzyBodyLateACL(t *testing.T) {
	e := newEnv(t)
	e.create("/a", nil)
	e.create("/a/b", nil)
	f := e.tree.StartFuzzyBody()       // writes the root
	if f.Step(e.tree, 1) || f.Late() { // writes /a
		t.Fatal("the walk ended early or is late already")
	}
	fresh := []zkproto.ACL{{Perms: zkproto.PermRead, ID: zkproto.ID{Scheme: "digest", ID: "late:x"}}}
	e.mustApply(zkproto.OpSetACL, &txn.SetACL{Path: "/a/b", ACL: fresh, Version: 1})
	for !f.Step(e.tree, 1) {
	}
	if !f.Late() {
		t.Fatal("a node with a list cached during the walk did not make it late")
	}
	nodes := f.Take()
	staged := append(append(f.ACLSection(), nodes...), EndMarker()...)
	back, err := ReadBody(bytes.NewReader(staged), 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffTrees(back, e.tree); d != "" {
		t.Fatal(d)
	}
	leading := append(append(slices.Clone(f.LeadingACLSection()), nodes...), EndMarker()...)
	if _, err := ReadBody(bytes.NewReader(leading), 0); err == nil {
		t.Fatal("a late body after the leading ACL section was read without error")
	}
}

// A walk stepped by another goroutine while the owner applies txns, one
// at a time and in held batches, converges like a walk stepped between
// txns; the digest it records at its end is the tree's at the zxid it
// records; and once it ends, the owner changes the tree without the lock.
// Run with -race, it also checks that the walk and the changes never
// touch the tree at the same time.
func TestFuzzyBodyConcurrentConverges(t *testing.T) {
	for seed := range uint64(20) {
		g := newGen(seed)
		g.sequence(250)
		rng := rand.New(rand.NewPCG(seed, 3))
		f := g.tree.StartFuzzyBodyConcurrent()
		type walked struct{ nodes []byte }
		done := make(chan walked)
		go func() {
			var nodes []byte
			for !f.StepConcurrent(g.tree, 1+int(seed%7)) {
				nodes = append(nodes, f.Take()...)
			}
			done <- walked{append(nodes, f.Take()...)}
		}()
		var later []*txn.Txn
		var w walked
	apply:
		for {
			select {
			case w = <-done:
				break apply
			default:
			}
			if len(later) > 5000 {
				w = <-done
				break
			}
			if rng.IntN(3) == 0 {
				g.tree.HoldWrites()
				later = append(later, g.sequence(1+rng.IntN(6))...)
				g.tree.ReleaseWrites()
			} else {
				later = append(later, g.sequence(1)...)
			}
		}
		if g.tree.walk.active.Load() != 0 {
			t.Fatalf("seed %d: the tree still guards its changes after the walk", seed)
		}
		body := append(append(f.ACLSection(), w.nodes...), EndMarker()...)
		tree, err := ReadBody(bytes.NewReader(body), 0)
		if err != nil {
			t.Fatalf("seed %d: read fuzzy body: %v", seed, err)
		}
		endZxid, endDigest := f.End()
		replayed := false
		for _, tx := range later {
			if !replayed && tx.Header.Zxid > endZxid {
				if got := tree.Digest(); got != endDigest {
					t.Fatalf("seed %d: digest at the walk's end zxid %v: %x, recorded %x", seed, endZxid, got, endDigest)
				}
				replayed = true
			}
			tree.Apply(tx)
		}
		if !replayed && tree.Digest() != endDigest {
			t.Fatalf("seed %d: digest at the walk's end zxid %v: %x, recorded %x", seed, endZxid, tree.Digest(), endDigest)
		}
		if d := diffTrees(tree, g.tree); d != "" {
			t.Fatalf("seed %d: after replaying %d txns:\n%s", seed, len(later), d)
		}
	}
}

// A concurrent walk aborted half way is done, and the tree no longer
// guards its changes.
func TestFuzzyBodyConcurrentAbort(t *testing.T) {
	g := newGen(9)
	g.sequence(200)
	f := g.tree.StartFuzzyBodyConcurrent()
	if g.tree.walk.active.Load() != 1 {
		t.Fatal("a concurrent walk does not guard the tree's changes")
	}
	f.StepConcurrent(g.tree, 10)
	f.AbortConcurrent(g.tree)
	if g.tree.walk.active.Load() != 0 {
		t.Fatal("the tree still guards its changes after the walk was aborted")
	}
	if !f.Step(g.tree, 10) {
		t.Fatal("an aborted walk is not done")
	}
}

// TestFuzzyBodyConcurrentWalksOverlap: a walk that ends while a later one
// still reads the tree (a failed snapshot's walker finishing after the
// next snapshot began) leaves the later one's guard in place; the tree
// stops guarding its changes only when no walk is left.
func TestFuzzyBodyConcurrentWalksOverlap(t *testing.T) {
	for _, endFirst := range []string{"complete", "abort"} {
		g := newGen(11)
		g.sequence(200)
		first := g.tree.StartFuzzyBodyConcurrent()
		second := g.tree.StartFuzzyBodyConcurrent()
		if endFirst == "abort" {
			first.AbortConcurrent(g.tree)
		} else {
			for !first.StepConcurrent(g.tree, 50) {
			}
		}
		if !g.tree.lockChange() {
			t.Fatalf("%s: the first walk's end left the second one's reads unguarded", endFirst)
		}
		g.tree.unlockChange(true)
		for !second.StepConcurrent(g.tree, 50) {
		}
		second.StepConcurrent(g.tree, 50) // a walk ends its guard once, however often it is told
		second.AbortConcurrent(g.tree)
		first.AbortConcurrent(g.tree)
		if n := g.tree.walk.active.Load(); n != 0 {
			t.Fatalf("%s: %d walks still counted after both ended", endFirst, n)
		}
		if g.tree.lockChange() {
			t.Fatalf("%s: the tree still guards its changes after both walks ended", endFirst)
		}
	}
}
