package server

import (
	"fmt"

	"keeper/coordination/datatree"
	"keeper/coordination/snap"
	"keeper/coordination/txn"
	"keeper/coordination/zxid"
)

// digestCheck checks a snapshot's digest record, taken at a zxid newer
// than the snapshot's own, against the tree the log's replay builds on it.
//
// A snapshot is fuzzy: it is written while txns apply, and it records the
// digest of the last txn applied when it ended. It can also hold effects of
// a txn after that one, applying as the walk ended: Apache ZooKeeper 3.8
// wrote a snapshot holding the node the multi after the record's zxid
// created, so the tree replayed to the record's zxid has that node and its
// digest differs, though nothing is lost. So a mismatch at the record's
// zxid is only pending: the replay goes on, and it is cleared by the first
// later txn whose log record carries a digest (each txn's digest of the
// tree after it, written before the txn applied, so no snapshot can
// disturb it) that the tree replayed through it matches. A replay that
// never matches again, or reaches no txn with a digest, has a tree that
// cannot be accounted for, and err reports the mismatch.
type digestCheck struct {
	want    *snap.Digest // the record, until the replay reaches its zxid
	pending error        // the record's mismatch, until a txn's digest matches
	// healed is the zxid of the txn whose digest cleared a mismatch, or 0
	// (no txn has zxid 0).
	healed zxid.ID
}

func newDigestCheck(record *snap.Digest) *digestCheck { return &digestCheck{want: record} }

// applied checks the tree after t was applied to it; file names t's log file.
func (c *digestCheck) applied(t *txn.Txn, tree *datatree.Tree, file string) {
	z := t.Header.Zxid
	switch {
	case c.want != nil && z == c.want.Zxid:
		if got := tree.Digest(); got != c.want.TreeDigest {
			c.pending = fmt.Errorf("%w: after replaying to %s (%s) the tree digest is %d, the snapshot recorded %d, and no later txn's digest in the log matches the tree",
				snap.ErrDigestMismatch, z, file, got, c.want.TreeDigest)
		}
		c.want = nil
	case c.pending != nil && t.Digest != nil && t.Digest.Version == datatree.DigestVersion &&
		tree.Digest() == t.Digest.TreeDigest:
		c.pending, c.healed = nil, z
	}
}

// waiting reports whether the replay has not reached the record's zxid.
func (c *digestCheck) waiting() bool { return c.want != nil }

// err is the mismatch still pending at the end of the replay, or nil.
func (c *digestCheck) err() error { return c.pending }
