package datatree

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// ErrCorrupt means a snapshot body is well-formed jute but does not describe
// a tree: no root, a node before its parent, a node twice, an ACL reference
// that is not in the ACL map, or a path that cannot name a node.
var ErrCorrupt = errors.New("datatree: corrupt snapshot body")

// endMarker ends the node list; no node can have this path because the
// root is written as "".
const endMarker = "/"

// flushBytes is how much WriteBody buffers before writing: large enough that
// an unbuffered writer sees few calls, small enough to stay in cache.
const flushBytes = 32 << 10

// WriteBody writes the tree as the part of a snapshot between the session
// list and the first seal (docs/zookeeper-protocol.md §9.4): the ACL cache in reference order,
// then every node in pre-order from the root with children in name order,
// then the "/" end marker. The output is deterministic, so replicas with
// equal trees write equal bytes. Memory use is bounded by the tree's depth
// and widest child list, not its size: the body streams to w in chunks of
// about 32 KiB.
func (t *Tree) WriteBody(w io.Writer) error {
	bw := bodyWriter{w: w}
	bw.e.B = make([]byte, 0, flushBytes+4096)
	t.writeACLs(&bw)
	t.writeNodes(&bw)
	bw.e.String(endMarker)
	bw.flush()
	if bw.err != nil {
		return fmt.Errorf("datatree: write snapshot body: %w", bw.err)
	}
	return nil
}

type bodyWriter struct {
	w   io.Writer
	e   jute.Encoder
	err error
}

// maybeFlush writes the buffer out once it holds flushBytes.
func (b *bodyWriter) maybeFlush() {
	if len(b.e.B) >= flushBytes {
		b.flush()
	}
}

func (b *bodyWriter) flush() {
	if b.err == nil && len(b.e.B) > 0 {
		_, b.err = b.w.Write(b.e.B)
	}
	b.e.B = b.e.B[:0]
}

func (t *Tree) writeACLs(bw *bodyWriter) {
	refs := slices.Sorted(maps.Keys(t.acl.byRef))
	bw.e.Int(int32(len(refs)))
	for _, ref := range refs {
		bw.e.Long(ref)
		zkproto.EncodeACLs(&bw.e, t.acl.byRef[ref].acls)
		bw.maybeFlush()
	}
}

// frame is one level of the pre-order walk: the sorted child names of the
// node whose path is path[:plen], and the next one to visit.
type frame struct {
	node  *Node
	names []string
	next  int
	plen  int
}

// writeNodes walks the tree iteratively, so a deep chain cannot exhaust the
// stack, building each path in one reused buffer.
func (t *Tree) writeNodes(bw *bodyWriter) {
	root := t.nodes[RootPath]
	if root == nil {
		return
	}
	path := make([]byte, 0, 256)
	writeNode(bw, path, root) // the root's path is written as ""
	stack := []frame{{node: root, names: root.Children()}}
	for len(stack) > 0 && bw.err == nil {
		top := &stack[len(stack)-1]
		if top.next == len(top.names) {
			stack = stack[:len(stack)-1]
			continue
		}
		name := top.names[top.next]
		top.next++
		child := top.node.children[name]
		path = append(append(path[:top.plen], '/'), name...)
		writeNode(bw, path, child)
		if len(child.children) > 0 {
			stack = append(stack, frame{node: child, names: child.Children(), plen: len(path)})
		}
	}
}

// writeNode writes { ustring path; buffer data; long aclRef; StatPersisted }.
func writeNode(bw *bodyWriter, path []byte, n *Node) {
	bw.e.Int(int32(len(path)))
	bw.e.B = append(bw.e.B, path...)
	bw.e.Buffer(n.data)
	bw.e.Long(n.aclRef)
	n.stat.Encode(&bw.e)
	bw.maybeFlush()
}

// ReadBody reads a snapshot body written by WriteBody or by ZooKeeper and
// builds the tree it describes: nodes, ACL cache (entries no node uses are
// dropped), ephemeral, container and TTL sets, data size and digest.
// LastZxid is zero; the caller sets it from the snapshot with SetLastZxid.
//
// ReadBody reads exactly the body's bytes, so the caller can go on to read
// the seal from r; pass a buffered reader for speed (and checksum above the
// buffer, not below it). maxLen bounds every buffer, string and vector
// (maxLen <= 0 means jute.DefaultMaxBuffer), and nothing is allocated ahead
// of the bytes that back it, so corrupt input cannot make ReadBody allocate
// much more than it reads.
//
// Errors wrap jute.ErrShort (the stream ended inside the body), jute.ErrLength
// (a bad length), ErrCorrupt, or the reader's own error.
func ReadBody(r io.Reader, maxLen int) (*Tree, error) { return ReadBodySized(r, maxLen, 0) }

// bytesPerNodeHint is what a node takes in a snapshot body at least in
// practice (path, 100 B or so of data, ACL reference, stat): ReadBodySized
// expects no more nodes than the body's size allows at this rate.
const bytesPerNodeHint = 200

// ReadBodySized is ReadBody for a body of about size bytes (0 if unknown):
// the node table is made large enough at once, not grown while loading
// (growing it was ≈ 20% of loading 1,000,000 znodes).
func ReadBodySized(r io.Reader, maxLen int, size int64) (*Tree, error) {
	if maxLen <= 0 {
		maxLen = jute.DefaultMaxBuffer
	}
	br := &bodyReader{r: r, maxLen: maxLen}
	t := newEmpty()
	var pc parentCache
	if hint := size / bytesPerNodeHint; hint > 1024 {
		t.nodes = make(map[string]*Node, min(hint, 1<<26))
		pc.presize = min(hint, 1<<26)
	}
	if err := t.readACLs(br); err != nil {
		return nil, err
	}
	if err := t.readNodes(br, &pc); err != nil {
		return nil, err
	}
	t.acl.purgeUnused()
	t.setupQuota()
	return t, nil
}

func (t *Tree) readACLs(br *bodyReader) error {
	count := br.int32()
	if br.err == nil && count < 0 {
		br.fail(fmt.Errorf("%w: ACL map size %d", ErrCorrupt, count))
	}
	for i := int32(0); i < count && br.err == nil; i++ {
		at := br.off
		ref := br.int64()
		acls, isNull := br.acls()
		switch {
		case br.err != nil:
		case isNull:
			br.fail(fmt.Errorf("%w: null ACL list for ref %d at offset %d", ErrCorrupt, ref, at))
		case !t.acl.load(ref, acls):
			br.fail(fmt.Errorf("%w: duplicate or reserved ACL ref %d at offset %d", ErrCorrupt, ref, at))
		}
	}
	return br.err
}

func (t *Tree) readNodes(br *bodyReader, pc *parentCache) error {
	for {
		at := br.off
		path := br.string()
		if br.err != nil {
			return br.err
		}
		if path == endMarker {
			break
		}
		n := &Node{}
		n.data = br.bytes()
		br.refAndStat(n)
		if br.err != nil {
			return br.err
		}
		if err := t.place(pc, path, n); err != nil {
			return fmt.Errorf("%w at offset %d", err, at)
		}
	}
	if t.nodes[RootPath] == nil {
		return fmt.Errorf("%w: no root node", ErrCorrupt)
	}
	return nil
}

// parentCache remembers the node placed last and the parent it went
// under. Snapshots list nodes in pre-order, so the next node's parent is
// almost always one of the two, and the lookup by path is skipped.
type parentCache struct {
	parentPath, lastPath string
	parent, last         *Node
	// presize is how many child slots the loader may still reserve ahead
	// (see presizeChildren); ReadBodySized starts it at the node count the
	// body's size suggests.
	presize int64
}

// presizeFrom is the fewest children a node's stat must promise before its
// child map is made at its final size rather than grown.
const presizeFrom = 1024

// presizeChildren makes n's child map large enough for the children its
// stat says it may have: the stored cversion counts child creations, so it
// is at least the number of children (with deletes, more). Growing a map of
// 1,000,000 children by splitting was ≈ 18% of a restart. What all maps
// reserve together is bounded by pc.presize, so parents that churned
// through many more children than they keep cost at most one node table's
// worth of slots.
func (pc *parentCache) presizeChildren(n *Node) {
	cv := int64(n.stat.Cversion)
	if cv < presizeFrom || pc.presize < presizeFrom {
		return
	}
	size := min(cv, pc.presize)
	pc.presize -= size
	n.children = make(map[string]*Node, size)
}

// parentOf returns the node at parentPath, or nil.
func (pc *parentCache) parentOf(t *Tree, parentPath string) *Node {
	switch {
	case pc.parent != nil && parentPath == pc.parentPath:
		return pc.parent
	case pc.last != nil && parentPath == pc.lastPath:
		pc.parentPath, pc.parent = pc.lastPath, pc.last
		return pc.parent
	}
	parent := t.nodes[parentPath]
	if parent != nil {
		pc.parentPath, pc.parent = parentPath, parent
	}
	return parent
}

// place links a node read from a snapshot into the tree.
func (t *Tree) place(pc *parentCache, path string, n *Node) error {
	var parent *Node
	var name string
	key := path
	if path == "" {
		key = RootPath
		if len(t.nodes) != 0 {
			return fmt.Errorf("%w: root is not the first node", ErrCorrupt)
		}
	} else {
		parentPath, childName, ok := splitPath(path)
		if !ok {
			return fmt.Errorf("%w: invalid path %q", ErrCorrupt, path)
		}
		if parent = pc.parentOf(t, parentPath); parent == nil {
			return fmt.Errorf("%w: parent %q of %q is missing", ErrCorrupt, parentPath, path)
		}
		// Every node in the tree is its parent's child, so the parent's
		// (smaller) map answers whether the path is taken.
		if _, dup := parent.children[childName]; dup {
			return fmt.Errorf("%w: node %q appears twice", ErrCorrupt, path)
		}
		name = childName
	}
	if !t.acl.use(n.aclRef) {
		return fmt.Errorf("%w: node %q has unknown ACL ref %d", ErrCorrupt, path, n.aclRef)
	}
	t.insert(key, name, parent, n)
	pc.presizeChildren(n)
	pc.lastPath, pc.last = key, n
	return nil
}
