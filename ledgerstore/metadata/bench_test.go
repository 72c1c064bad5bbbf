package metadata

import (
	"context"
	"testing"

	"keeper/coordination/zkclient"
	"keeper/ledgerstore/metadata/metadatatest"
)

// BenchmarkCreateLedger mints a ledger id and stores a new ledger's
// metadata, the metadata round trips of every ledgerclient.Create (an
// id znode created and deleted, the ledger znode created), against an
// in-process keeper server: one creator at a time, and many at once on
// the one session (the round trips pipeline).
func BenchmarkCreateLedger(b *testing.B) {
	ctx := context.Background()
	sess, err := zkclient.OpenSession(ctx, []string{metadatatest.KeeperAddr(b)}, zkclient.SessionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	s, err := New(sess, Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Init(ctx); err != nil {
		b.Fatal(err)
	}
	create := func(b *testing.B) {
		id, err := s.NewLedgerID(ctx)
		if err == nil {
			_, _, err = s.Create(ctx, id, sampleMetadata())
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			create(b)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				create(b)
			}
		})
	})
}
