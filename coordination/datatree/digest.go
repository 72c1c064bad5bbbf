package datatree

import (
	"encoding/binary"
	"hash/crc32"
	"strings"

	"keeper/coordination/txn"
)

// DigestVersion is the version of the digest formula below, as carried in
// TxnDigest records and snapshot digest sections.
const DigestVersion = txn.DigestVersion

// noDigestPrefix: nodes below /zookeeper/ contribute nothing, because Java
// updates quota nodes locally and they could differ between replicas.
// /zookeeper itself does count.
const noDigestPrefix = "/zookeeper/"

// digester computes node digests with a reused scratch buffer, because
// crc32.Update's argument escapes and a []byte(path) conversion would cost
// an allocation per call.
type digester struct {
	buf []byte
}

// sum is one node's term of the tree digest (docs/zookeeper-protocol.md §9.5): CRC-32 (IEEE) of
// the path ("" for the root), the data unless null, and the 60 bytes
// czxid, mzxid, pzxid, ctime, mtime, version, stored cversion, aversion,
// ephemeralOwner, all big-endian.
func (g *digester) sum(path string, n *Node) uint32 {
	if strings.HasPrefix(path, noDigestPrefix) {
		return 0
	}
	if path == RootPath {
		path = ""
	}
	b := append(g.buf[:0], path...)
	crc := crc32.Update(0, crc32.IEEETable, b)
	crc = crc32.Update(crc, crc32.IEEETable, n.data)
	s := &n.stat
	be := binary.BigEndian
	b = be.AppendUint64(b[:0], uint64(s.Czxid))
	b = be.AppendUint64(b, uint64(s.Mzxid))
	b = be.AppendUint64(b, uint64(s.Pzxid))
	b = be.AppendUint64(b, uint64(s.Ctime))
	b = be.AppendUint64(b, uint64(s.Mtime))
	b = be.AppendUint32(b, uint32(s.Version))
	b = be.AppendUint32(b, uint32(s.Cversion))
	b = be.AppendUint32(b, uint32(s.Aversion))
	b = be.AppendUint64(b, uint64(s.EphemeralOwner))
	g.buf = b
	return crc32.Update(crc, crc32.IEEETable, b)
}

// rehash recomputes n's digest term after a change to its data or stat and
// moves the tree digest by the difference, so the tree digest never needs
// a full pass.
func (t *Tree) rehash(path string, n *Node) {
	d := t.dg.sum(path, n)
	t.digest += int64(d) - int64(n.digest)
	n.digest = d
}

// Digest returns the tree digest: the wrapping sum of every node's term,
// the root counted once. It is maintained incrementally.
func (t *Tree) Digest() int64 { return t.digest }

// ComputeDigest recomputes the tree digest from scratch in O(nodes). It
// must always equal Digest; tests and invariant checks compare the two.
func (t *Tree) ComputeDigest() int64 {
	var g digester
	var sum int64
	for path, n := range t.nodes {
		sum += int64(g.sum(path, n))
	}
	return sum
}
