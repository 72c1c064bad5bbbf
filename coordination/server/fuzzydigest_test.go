package server

import (
	"errors"
	"fmt"
	"testing"

	"keeper/coordination/datatree"
	"keeper/coordination/snap"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
)

// A fuzzy snapshot's digest record is checked against the replayed tree,
// and a mismatch is forgiven only once a later txn's own digest in the log
// matches the tree: the snapshot held part of a txn after its record.
func TestDigestCheck(t *testing.T) {
	create := func(k uint32) *txn.Txn {
		return &txn.Txn{
			Header: txn.Header{ClientID: 1, Cxid: int32(k), Zxid: zxid.ID(k), Time: int64(k), Type: zkproto.OpCreate},
			Record: &txn.Create{Path: fmt.Sprintf("/n%d", k), Data: []byte("x"), ACL: zkproto.OpenACLUnsafe, ParentCversion: int32(k)},
		}
	}
	// The live history: four creates, each logged with the digest of the
	// tree after it.
	live := datatree.New()
	var logged []*txn.Txn
	for k := uint32(1); k <= 4; k++ {
		tx := create(k)
		live.Apply(tx)
		tx.Digest = &txn.Digest{Version: datatree.DigestVersion, TreeDigest: live.Digest()}
		logged = append(logged, tx)
	}
	digestAfter := func(k int) int64 { return logged[k-1].Digest.TreeDigest }
	tests := []struct {
		name string
		// fuzzy: txns the snapshot (named zxid 0) already holds.
		fuzzy []int
		// record: the snapshot's digest record, at zxid recordAt.
		recordAt int
		record   func() int64
		// strip: txns logged without a digest, or with another version.
		strip, otherVersion []int
		// stray: the snapshot holds a node no txn made.
		stray      bool
		wantErr    bool
		wantHealed zxid.ID
	}{
		{name: "record matches", recordAt: 2, record: func() int64 { return digestAfter(2) }},
		{name: "snapshot held a later create", fuzzy: []int{3}, recordAt: 2, record: func() int64 { return digestAfter(2) },
			wantHealed: 3},
		{name: "no later txn carries a digest", fuzzy: []int{3}, recordAt: 2, record: func() int64 { return digestAfter(2) },
			strip: []int{3, 4}, wantErr: true},
		{name: "later digests of another version", fuzzy: []int{3}, recordAt: 2, record: func() int64 { return digestAfter(2) },
			otherVersion: []int{3, 4}, wantErr: true},
		{name: "the tree never matches again", stray: true, recordAt: 2, record: func() int64 { return digestAfter(2) }, wantErr: true},
		{name: "a wrong record, a tree the log's digests account for", recordAt: 2, record: func() int64 { return digestAfter(2) + 1 },
			wantHealed: 3},
		{name: "healed only once the txn the snapshot held is replayed", fuzzy: []int{4}, recordAt: 2,
			record: func() int64 { return digestAfter(2) }, wantHealed: 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tree := datatree.New()
			for _, k := range tc.fuzzy {
				tree.Apply(create(uint32(k)))
			}
			if tc.stray {
				stray := create(9)
				stray.Record.(*txn.Create).Path = "/stray"
				tree.Apply(stray)
			}
			c := newDigestCheck(&snap.Digest{Zxid: zxid.ID(tc.recordAt), Version: datatree.DigestVersion, TreeDigest: tc.record()})
			for i, tx := range logged {
				k := i + 1
				replayed := *tx
				for _, s := range tc.strip {
					if s == k {
						replayed.Digest = nil
					}
				}
				for _, s := range tc.otherVersion {
					if s == k {
						replayed.Digest = &txn.Digest{Version: datatree.DigestVersion + 1, TreeDigest: tx.Digest.TreeDigest}
					}
				}
				tree.Apply(create(uint32(k)))
				c.applied(&replayed, tree, "log.1")
			}
			if c.waiting() {
				t.Fatal("the replay passed the record's zxid, but the check still waits for it")
			}
			err := c.err()
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, snap.ErrDigestMismatch)) {
				t.Fatalf("err = %v, want a digest mismatch: %v", err, tc.wantErr)
			}
			if c.healed != tc.wantHealed {
				t.Fatalf("healed at %v, want %v", c.healed, tc.wantHealed)
			}
			if (tree.Digest() == live.Digest()) == tc.stray {
				t.Fatalf("the replayed tree's digest is %d, the live one's %d", tree.Digest(), live.Digest())
			}
		})
	}
	t.Run("log ends before the record", func(t *testing.T) {
		c := newDigestCheck(&snap.Digest{Zxid: 9, Version: datatree.DigestVersion})
		tree := datatree.New()
		tree.Apply(logged[0])
		c.applied(logged[0], tree, "log.1")
		if !c.waiting() {
			t.Fatal("the check does not wait for a record beyond the replay")
		}
	})
}
