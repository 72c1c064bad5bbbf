package datatree

import (
	"iter"
	"strings"
	"unicode/utf16"
)

// Quotas, as Apache ZooKeeper 3.8's DataTree keeps them. A quota on path P
// is two ordinary znodes that clients create (zkCli's setquota does):
//
//	/zookeeper/quota/P/zookeeper_limits   a StatsTrack of limits
//	/zookeeper/quota/P/zookeeper_stats    a StatsTrack: count, bytes of P's subtree
//
// The tree tracks the paths that have a limits node (Java's PathTrie) and
// keeps each stats node's data current as it applies txns:
//
//   - creating a limits node starts tracking the path it names; creating
//     a stats node sets its data to "count=N,bytes=M" of the subtree as it
//     is (the node itself included);
//   - deleting a limits node stops tracking;
//   - every create, delete and setData of a node under a tracked path adds
//     its count and data bytes to the stats node of the deepest tracked
//     path above it (or at it).
//
// These updates replace the stats node's data but not its stat (version,
// mzxid and mtime stay), trigger no watch, and, as in Java, leave the
// approximate data size as it was (Java rewrites the data behind its own
// size counter); a restart counts the size afresh. Nodes below /zookeeper/
// are outside the tree digest, so the digest does not move either.
//
// Loading a snapshot rebuilds the tracking (Java's setupQuota): every
// childless node named zookeeper_limits below /zookeeper/quota marks its
// path, whose stats node is recounted from the tree. A recount covers the
// whole subtree, the subtrees of quotas nested in it included, while
// applying counts a node only towards the deepest quota above it: after a
// restart an outer quota's stats include its nested quotas' nodes, as in
// ZooKeeper.
//
// Where Java throws while applying a txn (a limits node directly under
// /zookeeper/quota, a stats node whose data does not parse, deleting a
// zookeeper_limits child of a /zookeeper node with a name shorter than
// "quota"), and so stops the server, the tree leaves the tracking or the
// stats data unchanged and applies the rest of the txn.

// Names of the quota nodes.
const (
	QuotaLimitNode = "zookeeper_limits"
	QuotaStatNode  = "zookeeper_stats"
)

// QuotaLimitPath returns the path of the limits node of a quota on path
// (Java's Quotas.limitPath: plain concatenation).
func QuotaLimitPath(path string) string { return QuotaPath + path + "/" + QuotaLimitNode }

// QuotaStatPath returns the path of the stats node of a quota on path
// (Java's Quotas.statPath).
func QuotaStatPath(path string) string { return QuotaPath + path + "/" + QuotaStatNode }

// QuotaPrefix returns the quota whose stats count path: the deepest tracked
// path that is path or above it, compared by non-blank name (as Java's
// PathTrie, which drops names that are empty or all blanks). ok is false
// if there is none. The root never has a quota.
func (t *Tree) QuotaPrefix(path string) (prefix string, ok bool) {
	if len(t.quotas) == 0 {
		return "", false
	}
	var key strings.Builder
	for name := range quotaNames(path) {
		key.WriteByte('/')
		key.WriteString(name)
		if _, tracked := t.quotas[key.String()]; tracked {
			prefix, ok = key.String(), true
		}
	}
	return prefix, ok
}

// QuotaPaths returns the tracked quota paths, sorted.
func (t *Tree) QuotaPaths() []string { return sortedKeys(t.quotas) }

// quotaNames yields the names of path that Java's PathTrie keeps: those
// that are not empty after trimming characters up to ' '.
func quotaNames(path string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for name := range strings.SplitSeq(path, "/") {
			if strings.TrimFunc(name, func(r rune) bool { return r <= ' ' }) == "" {
				continue
			}
			if !yield(name) {
				return
			}
		}
	}
}

// quotaKey is the PathTrie key of path: its kept names joined, or "" if it
// has none (Java refuses "" and keeps nothing useful for the others).
func quotaKey(path string) string {
	var b strings.Builder
	for name := range quotaNames(path) {
		b.WriteByte('/')
		b.WriteString(name)
	}
	return b.String()
}

// trackQuota starts tracking the quota on path (PathTrie.addPath).
func (t *Tree) trackQuota(path string) {
	if key := quotaKey(path); key != "" {
		t.quotas[key] = struct{}{}
	}
}

// quotaCreated does what Java's createNode does for quotas once the node
// at path (child name of parentPath) exists.
func (t *Tree) quotaCreated(parentPath, name, path string, dataLen int) {
	if strings.HasPrefix(parentPath, QuotaPath) {
		switch name {
		case QuotaLimitNode:
			t.trackQuota(parentPath[len(QuotaPath):])
		case QuotaStatNode:
			t.recountQuota(parentPath[len(QuotaPath):])
		}
	}
	if prefix, ok := t.QuotaPrefix(path); ok {
		t.addQuotaStat(prefix, int64(dataLen), 1)
	}
}

// quotaDeleted does what Java's deleteNode does for quotas once the node
// at path (child name of parentPath) is gone.
func (t *Tree) quotaDeleted(parentPath, name, path string, dataLen int) {
	if name == QuotaLimitNode && strings.HasPrefix(parentPath, ZooKeeperPath) {
		// Java strips len("/zookeeper/quota") UTF-16 units from any
		// /zookeeper... parent, quota or not.
		if rest, ok := afterUTF16(parentPath, len(QuotaPath)); ok {
			delete(t.quotas, quotaKey(rest))
		}
	}
	if prefix, ok := t.QuotaPrefix(path); ok {
		t.addQuotaStat(prefix, -int64(dataLen), -1)
	}
}

// quotaDataChanged accounts for a setData at path that changed its data
// length by diff.
func (t *Tree) quotaDataChanged(path string, diff int) {
	if prefix, ok := t.QuotaPrefix(path); ok {
		t.addQuotaStat(prefix, int64(diff), 0)
	}
}

// afterUTF16 returns s without its first n UTF-16 code units (Java's
// substring(n)), and false where Java would throw or get an empty string.
func afterUTF16(s string, n int) (string, bool) {
	units := 0
	for i, r := range s {
		if units >= n {
			return s[i:], units == n
		}
		units += utf16.RuneLen(r)
	}
	return "", false
}

// addQuotaStat adds to the count and bytes of the stats node of the quota
// on prefix (Java's updateQuotaStat). A missing stats node, or one whose
// data does not parse, is left as it is.
func (t *Tree) addQuotaStat(prefix string, bytesDiff, countDiff int64) {
	statPath := QuotaStatPath(prefix)
	n := t.nodes[statPath]
	if n == nil {
		return
	}
	st, err := ParseStatsTrack(n.data)
	if err != nil {
		return
	}
	st.Set(QuotaCount, st.Count()+countDiff)
	st.Set(QuotaBytes, st.Bytes()+bytesDiff)
	t.rewriteQuotaStat(statPath, n, []byte(st.String()))
}

// recountQuota sets the stats node of the quota on path to the count and
// data bytes of path's subtree (Java's updateQuotaForPath). path is the
// text after /zookeeper/quota as it stands ("" counts the whole tree).
func (t *Tree) recountQuota(path string) {
	statPath := QuotaStatPath(path)
	n := t.nodes[statPath]
	if n == nil {
		return
	}
	var count, bytes int64
	if root := t.nodes[lookupKey(path)]; root != nil {
		stack := []*Node{root}
		for len(stack) > 0 {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			count++
			bytes += int64(len(top.data))
			for _, c := range top.children {
				stack = append(stack, c)
			}
		}
	}
	var st StatsTrack
	st.Set(QuotaCount, count)
	st.Set(QuotaBytes, bytes)
	t.rewriteQuotaStat(statPath, n, []byte(st.String()))
}

// rewriteQuotaStat gives the stats node n new data, a fresh slice (a
// snapshot being written may still hold the old one). Its stat stays, and
// the approximate data size does not follow (see the comment at the top).
func (t *Tree) rewriteQuotaStat(path string, n *Node, data []byte) {
	t.quotaDrift -= sizeOf(path, data) - sizeOf(path, n.data)
	n.data = data
	t.rehash(path, n)
}

// setupQuota rebuilds the tracking from the tree after a snapshot was
// loaded (Java's setupQuota): each childless zookeeper_limits node below
// /zookeeper/quota names a quota, taken up to the first "/zookeeper_limits"
// in its path; its stats are recounted, then it is tracked. Quotas are
// visited in path order.
func (t *Tree) setupQuota() {
	const limitSuffix = "/" + QuotaLimitNode
	stack := []string{QuotaPath}
	for len(stack) > 0 {
		path := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := t.nodes[path]
		if n == nil {
			continue
		}
		if len(n.children) == 0 {
			if strings.HasSuffix(path, limitSuffix) {
				real := path[len(QuotaPath):strings.Index(path, limitSuffix)]
				t.recountQuota(real)
				t.trackQuota(real)
			}
			continue
		}
		kids := n.Children()
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, path+"/"+kids[i])
		}
	}
}
