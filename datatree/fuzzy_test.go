package datatree

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"keeper/txn"
)

// fuzzyBody runs a whole walk, calling between after every step, and
// returns the body bytes as a snapshot would hold them.
func fuzzyBody(tree *Tree, stepNodes func() int, between func()) []byte {
	f := tree.StartFuzzyBody()
	var nodes []byte
	for done := false; !done; {
		done = f.Step(tree, stepNodes())
		nodes = append(nodes, f.Take()...)
		if !done {
			between()
		}
	}
	body := append(f.ACLSection(), nodes...)
	return append(body, EndMarker()...)
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
	for seed := range uint64(40) {
		g := newGen(seed)
		g.sequence(250)
		rng := rand.New(rand.NewPCG(seed, 1))
		var later []*txn.Txn
		body := fuzzyBody(g.tree, func() int { return 1 + rng.IntN(8) }, func() {
			later = append(later, g.sequence(rng.IntN(4))...)
		})
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
