package vfs

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
)

// CrashClone returns a new MemFS holding what a crash (a power loss) at this
// moment would leave on disk. m itself is unchanged, and files open on m
// stay open on m.
//
// With rng nil the crash is the worst case the durability model allows
// (see MemFS): every file holds exactly its synced contents and every
// directory exactly its durable entries.
//
// With rng set, the crash also lets some unsynced changes through, as a
// disk that wrote part of its cache back before the power went would:
//
//   - directories: a random prefix of the directory changes made since the
//     last SyncDir that covered them (changes reach the disk in order);
//   - each file: a random prefix of the writes and truncates made since its
//     last sync, the first one left out possibly torn at a random byte.
//
// A given rng state always gives the same result: the walk is in sorted
// order, never in map order.
func (m *MemFS) CrashClone(rng *rand.Rand) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	entries := make(map[*memNode]map[string]*memNode, len(m.dirs))
	for _, d := range m.dirs {
		entries[d] = maps.Clone(d.durable)
	}
	kept := 0
	if rng != nil {
		kept = rng.IntN(len(m.meta) + 1)
	}
	lookup := func(n *memNode) map[string]*memNode { return entries[n] }
	for i := range m.meta[:kept] {
		m.meta[i].apply(lookup)
	}
	c := &MemFS{}
	copies := make(map[*memNode]*memNode)
	c.root = c.cloneLocked(m.root, entries, copies, rng)
	return c
}

// cloneLocked copies n into c as the crash leaves it. copies maps nodes
// already copied, so that a file reachable under two names (a rename that
// is durable in only one of its two directories) stays one file.
func (c *MemFS) cloneLocked(n *memNode, entries map[*memNode]map[string]*memNode,
	copies map[*memNode]*memNode, rng *rand.Rand) *memNode {
	if cp, ok := copies[n]; ok {
		return cp
	}
	if !n.dir {
		data := crashContents(n, rng)
		cp := &memNode{data: data, synced: bytes.Clone(data)}
		copies[n] = cp
		return cp
	}
	cp := c.newDirLocked()
	copies[n] = cp
	for _, name := range slices.Sorted(maps.Keys(entries[n])) {
		child := c.cloneLocked(entries[n][name], entries, copies, rng)
		cp.children[name] = child
		cp.durable[name] = child
	}
	return cp
}

// crashContents returns the contents a crash leaves in file n.
func crashContents(n *memNode, rng *rand.Rand) []byte {
	data := bytes.Clone(n.synced)
	if rng == nil || len(n.pending) == 0 {
		return data
	}
	kept := rng.IntN(len(n.pending) + 1)
	for _, op := range n.pending[:kept] {
		data = op.apply(data)
	}
	if kept < len(n.pending) {
		if op := n.pending[kept]; !op.truncate && len(op.b) > 1 {
			op.b = op.b[:rng.IntN(len(op.b))] // a strict prefix: the write tore
			data = op.apply(data)
		}
	}
	return data
}
