package datatree

import (
	"iter"
	"maps"
	"slices"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// FuzzyBody writes a snapshot body a few nodes at a time while the tree
// keeps changing in between: Apache ZooKeeper's "fuzzy snapshot". The
// owner of the tree calls Step between applying txns, so no lock is needed
// and writes never stop for long.
//
// The result is not the tree at any one zxid: each node is written as it
// was when the walk reached it. Every txn applied after the walk started
// has a zxid above the snapshot's, so replaying the log from there
// converges on the right tree (Apply is idempotent for that purpose, docs/zookeeper-protocol.md
// §9.4). Nodes created after their parent was visited are left out; nodes
// deleted before the walk reached them are skipped.
//
// The ACL section must precede the nodes in the file. LeadingACLSection is
// every ACL list cached when the walk started, as Apache ZooKeeper writes
// it, and covers every node written unless one uses a list first cached
// during the walk (Late): references are never reused, so such a node's
// reference is above every one the walk started with. A caller can stream
// the nodes (Take) straight after the leading section and fall back, when
// Late, to staging them and writing ACLSection, built from the lists the
// nodes used as they were when each node was written.
type FuzzyBody struct {
	stack    []fuzzyFrame
	path     []byte                  // the path of the node last pushed; frames hold prefixes
	refs     map[int64][]zkproto.ACL // ACL lists of the references written
	ref      int64                   // the reference last written, known to be in refs
	e        jute.Encoder            // nodes encoded since the last Take
	chunk    int                     // the size of the last Take, to size the next buffer
	nodes    int
	leading  []byte // the ACL section of every list cached at the start
	startRef int64  // the highest reference allocated at the start
	late     bool   // a node written uses a reference above startRef
	inOrder  bool   // children in name order (StartFuzzyBodyInOrder)

	// A concurrent walk (StartFuzzyBodyConcurrent) yields to the owner's
	// changes, and records where the tree stood when it completed.
	concurrent bool
	guarding   bool // counted in the tree's walkGuard until it ends (walker only)
	endZxid    zxid.ID
	endDigest  int64
}

// fuzzyFrame is one level of the walk: an iterator over the children of
// the node whose path is path[:plen], pulled lazily so that a node with a
// million children costs no more per step than any other (listing or
// sorting them at once would stall the owner of the tree). Children added
// or removed while the walk is suspended may or may not be visited, which
// a fuzzy snapshot allows: the log replay after it settles them. A child is
// visited as the map holds it when the iterator reaches it, so a node
// deleted before then is skipped, as is its name's later incarnation if the
// map produced the name before it was re-created.
type fuzzyFrame struct {
	plen int
	next func() (string, *Node, bool)
	stop func()
}

// StartFuzzyBody begins a walk from the root. The walk must be run to
// completion with Step, or ended with Abort.
func (t *Tree) StartFuzzyBody() *FuzzyBody { return t.startFuzzyBody(false) }

// StartFuzzyBodyInOrder is StartFuzzyBody visiting each node's children in
// name order, so that what a walk writes depends only on the tree and on
// when the steps come, never on map iteration: for the simulator, whose
// runs must replay exactly from their seed. Each node's children are
// listed and sorted when the walk reaches it, which costs a server with a
// wide tree the stall the default walk avoids.
func (t *Tree) StartFuzzyBodyInOrder() *FuzzyBody { return t.startFuzzyBody(true) }

func (t *Tree) startFuzzyBody(inOrder bool) *FuzzyBody {
	f := &FuzzyBody{inOrder: inOrder, refs: make(map[int64][]zkproto.ACL), ref: openACLRef, path: make([]byte, 0, 256),
		startRef: t.acl.index, leading: encodeACLSection(t.acl.byRef, func(e *aclEntry) []zkproto.ACL { return e.acls })}
	if root := t.nodes[RootPath]; root != nil {
		f.write(t, root) // the root's path is written as ""
		if len(root.children) > 0 {
			f.push(root.children)
		}
	}
	return f
}

// push starts walking children, the children of the node at f.path.
func (f *FuzzyBody) push(children map[string]*Node) {
	if f.inOrder {
		f.stack = append(f.stack, fuzzyFrame{plen: len(f.path), next: inOrder(children), stop: func() {}})
		return
	}
	next, stop := iter.Pull2(maps.All(children))
	f.stack = append(f.stack, fuzzyFrame{plen: len(f.path), next: next, stop: stop})
}

// inOrder returns an iterator over the children's names as they are now,
// in order, each with the node the map holds when the iterator reaches it;
// a name deleted by then is skipped.
func inOrder(children map[string]*Node) func() (string, *Node, bool) {
	names := slices.Sorted(maps.Keys(children))
	return func() (string, *Node, bool) {
		for len(names) > 0 {
			name := names[0]
			names = names[1:]
			if n, ok := children[name]; ok {
				return name, n, true
			}
		}
		return "", nil, false
	}
}

// Abort ends an unfinished walk and releases what it holds.
func (f *FuzzyBody) Abort() {
	for _, fr := range f.stack {
		fr.stop()
	}
	f.stack = nil
}

// Step writes up to maxNodes more nodes and reports whether the walk is
// complete. It must be called by the tree's owner, never concurrently with
// Apply.
func (f *FuzzyBody) Step(t *Tree, maxNodes int) bool { return f.step(t, maxNodes) }

// step is Step; in a concurrent walk it also ends when the owner waits to
// change the tree.
func (f *FuzzyBody) step(t *Tree, maxNodes int) bool {
	if f.e.B == nil && f.chunk > 0 {
		f.e.B = make([]byte, 0, f.chunk+f.chunk/8)
	}
	for n := 0; n < maxNodes && len(f.stack) > 0; {
		if f.concurrent && t.walk.wanted.Load() {
			break
		}
		top := &f.stack[len(f.stack)-1]
		name, node, ok := top.next()
		if !ok {
			top.stop()
			f.stack = f.stack[:len(f.stack)-1]
			continue
		}
		f.path = append(append(f.path[:top.plen], '/'), name...)
		f.write(t, node)
		n++
		if len(node.children) > 0 {
			f.push(node.children)
		}
	}
	return len(f.stack) == 0
}

// write encodes n with the path in f.path.
func (f *FuzzyBody) write(t *Tree, n *Node) {
	if n.aclRef != openACLRef && n.aclRef != f.ref {
		if _, ok := f.refs[n.aclRef]; !ok {
			f.refs[n.aclRef] = t.acl.get(n.aclRef)
			f.late = f.late || n.aclRef > f.startRef
		}
		f.ref = n.aclRef
	}
	f.e.Int(int32(len(f.path)))
	f.e.B = append(f.e.B, f.path...)
	f.e.Buffer(n.data)
	f.e.Long(n.aclRef)
	n.stat.Encode(&f.e)
	f.nodes++
}

// Take returns the nodes encoded since the last call, in file order. The
// caller owns the slice.
func (f *FuzzyBody) Take() []byte {
	b := f.e.B
	f.e.B = nil
	f.chunk = len(b)
	return b
}

// Reuse hands the walk an encoded buffer whose reader is done with it: the
// next nodes are encoded into it instead of into a new one, so a walk of a
// large tree makes no garbage in proportion to it.
func (f *FuzzyBody) Reuse(b []byte) {
	if f.e.B == nil {
		f.e.B = b[:0]
	}
}

// Nodes returns the number of nodes written so far.
func (f *FuzzyBody) Nodes() int { return f.nodes }

// ACLSection returns the ACL cache section of the body: the lists of every
// reference the written nodes use, in reference order.
func (f *FuzzyBody) ACLSection() []byte {
	return encodeACLSection(f.refs, func(acls []zkproto.ACL) []zkproto.ACL { return acls })
}

// LeadingACLSection returns the ACL section of every list cached when the
// walk started. It may precede the nodes unless Late.
func (f *FuzzyBody) LeadingACLSection() []byte { return f.leading }

// Late reports whether a node written so far uses an ACL list first cached
// after the walk started, which LeadingACLSection lacks.
func (f *FuzzyBody) Late() bool { return f.late }

// encodeACLSection encodes the references of m, in increasing order, with
// their lists.
func encodeACLSection[V any](m map[int64]V, acls func(V) []zkproto.ACL) []byte {
	var e jute.Encoder
	refs := slices.Sorted(maps.Keys(m))
	e.Int(int32(len(refs)))
	for _, ref := range refs {
		e.Long(ref)
		zkproto.EncodeACLs(&e, acls(m[ref]))
	}
	return e.B
}

// EndMarker returns the bytes that end the node list.
func EndMarker() []byte {
	var e jute.Encoder
	e.String(endMarker)
	return e.B
}
