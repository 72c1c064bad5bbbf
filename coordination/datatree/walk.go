package datatree

import (
	"sync"
	"sync/atomic"

	"keeper/coordination/zxid"
)

// walkGuard lets other goroutines walk the tree for a snapshot
// (StartFuzzyBodyConcurrent) while the tree's owner goes on changing it.
// A walk reads under mu shared, a step at a time; the owner's changes
// take mu exclusively, but only while some such walk is active, so a tree
// without one pays an atomic load per change. Walks are counted, not
// flagged: a walk that ends late (its snapshot's writer failed, and the
// next snapshot began) must not end the guard of the walk after it. A
// step yields as soon as the owner waits (wanted), so a change waits for
// about one node's encoding, not a whole step. The owner's reads never
// take mu: it is the only writer, and reads do not conflict with reads.
type walkGuard struct {
	mu     sync.RWMutex
	active atomic.Int32 // concurrent walks that may read the tree
	wanted atomic.Bool  // the owner waits for mu: the walk's step ends
	held   bool         // the owner holds mu (HoldWrites); owner only
}

// ownerSpins is how many times the owner tries for the lock before it
// sleeps on it: the walk notices wanted within a node, so the lock is
// usually free within a few hundred nanoseconds, far less than the
// owner's goroutine would take to park and wake.
const ownerSpins = 256

// lockForOwner takes mu exclusively for the owner.
func (g *walkGuard) lockForOwner() {
	g.wanted.Store(true)
	locked := false
	for range ownerSpins {
		if locked = g.mu.TryLock(); locked {
			break
		}
	}
	if !locked {
		g.mu.Lock()
	}
	g.wanted.Store(false)
}

// lockChange is what every change to the tree calls first: it takes the
// walk's lock if a concurrent walk is active and the owner does not hold
// it already, and reports whether it did (unlockChange then releases it).
func (t *Tree) lockChange() bool {
	if t.walk.held || t.walk.active.Load() == 0 {
		return false
	}
	t.walk.lockForOwner()
	return true
}

func (t *Tree) unlockChange(locked bool) {
	if locked {
		t.walk.mu.Unlock()
	}
}

// HoldWrites makes the owner's changes until ReleaseWrites take the walk's
// lock once for all of them, for a batch of txns applied together: a
// concurrent walk then waits for the batch, rather than the owner waiting
// for the walk at each txn. Without a concurrent walk it does nothing.
func (t *Tree) HoldWrites() {
	if !t.walk.held && t.walk.active.Load() > 0 {
		t.walk.lockForOwner()
		t.walk.held = true
	}
}

// ReleaseWrites ends HoldWrites.
func (t *Tree) ReleaseWrites() {
	if t.walk.held {
		t.walk.held = false
		t.walk.mu.Unlock()
	}
}

// StartFuzzyBodyConcurrent is StartFuzzyBody for a walk whose steps run on
// another goroutine than the tree's owner (StepConcurrent), while the
// owner applies txns: Apache ZooKeeper's snapshot thread, which walks the
// tree beside the thread that changes it. The owner calls it; from then
// until the walk completes or AbortConcurrent ends it, every change to
// the tree waits for the walk's current node.
func (t *Tree) StartFuzzyBodyConcurrent() *FuzzyBody {
	f := t.startFuzzyBody(false)
	f.concurrent, f.guarding = true, true
	t.walk.active.Add(1)
	return f
}

// StepConcurrent is Step for a walk begun with StartFuzzyBodyConcurrent,
// called by the walking goroutine only. It writes up to maxNodes nodes,
// fewer when the owner waits to change the tree. When the walk completes
// it records the tree's digest and last zxid as of the end (End), and the
// tree no longer guards its changes.
func (f *FuzzyBody) StepConcurrent(t *Tree, maxNodes int) bool {
	t.walk.mu.RLock()
	done := f.step(t, maxNodes)
	if done {
		f.endZxid, f.endDigest = t.lastZxid, t.digest
	}
	t.walk.mu.RUnlock()
	if done {
		f.unguard(t)
	}
	return done
}

// unguard ends the walk's part in the tree's guard, once.
func (f *FuzzyBody) unguard(t *Tree) {
	if f.guarding {
		f.guarding = false
		t.walk.active.Add(-1)
	}
}

// AbortConcurrent is Abort for a concurrent walk, called by the walking
// goroutine: the tree no longer guards its changes.
func (f *FuzzyBody) AbortConcurrent(t *Tree) {
	t.walk.mu.RLock()
	f.Abort()
	t.walk.mu.RUnlock()
	f.unguard(t)
}

// End returns the last zxid applied to the tree and its digest when a
// concurrent walk completed: the digest a snapshot records with the walk.
func (f *FuzzyBody) End() (zxid.ID, int64) { return f.endZxid, f.endDigest }
