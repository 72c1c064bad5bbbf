// Package ledgertest runs a small ledger cluster inside a test process: an
// in-memory keeper coordination server for the metadata and bookies on
// temporary directories, the bookies on ports of their own (testhost).
// The ledger client's tests and the `keeper ledger` command's tests use it.
package ledgertest

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"keeper/coordination/server"
	"keeper/internal/testhost"
	"keeper/ledgerstore/bookie"
	"keeper/ledgerstore/bookie/entrystore"
	"keeper/ledgerstore/metadata/metadatatest"
)

// Cluster is a metadata server and bookies; everything stops when the test
// ends.
type Cluster struct {
	t testing.TB
	// ZK is the metadata server: a standalone keeper server in memory.
	ZK *server.Server
	// Bookies are the bookies, in the order they were added; stopped ones
	// stay in place.
	Bookies []*Bookie
	// tweak, if set, changes each bookie's configuration (StartWith).
	tweak func(*bookie.Config)
}

// Bookie is one bookie of a Cluster.
type Bookie struct {
	*bookie.Bookie
	cfg     bookie.Config
	usage   atomic.Uint64 // used fraction of every ledger disk, in millionths
	stopped bool
}

// Start starts a metadata server and n bookies, each registered (writable)
// when Start returns.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartWith(t, n, nil)
}

// StartWith is Start with tweak applied to every bookie's configuration
// (TLS, say).
func StartWith(t testing.TB, n int, tweak func(*bookie.Config)) *Cluster {
	t.Helper()
	// Its Cleanup is registered first, so it runs after the bookies stop.
	c := &Cluster{t: t, ZK: metadatatest.Keeper(t, metadatatest.FastTicks()), tweak: tweak}
	for range n {
		c.AddBookie()
	}
	return c
}

// ZKAddr returns the metadata server's host:port.
func (c *Cluster) ZKAddr() string { return c.ZK.Addr().String() }

// AddBookie starts one more bookie.
func (c *Cluster) AddBookie() *Bookie {
	c.t.Helper()
	dir := c.t.TempDir()
	b := &Bookie{}
	b.usage.Store(100_000) // 10%
	cfg := bookie.Config{
		// A port of its own (testhost), not an ephemeral one, so that no
		// outgoing connection takes it while Restart has the bookie down.
		ListenAddr:               testhost.Addr(c.t),
		JournalDirs:              []string{filepath.Join(dir, "journal")},
		LedgerDirs:               []string{filepath.Join(dir, "ledgers")},
		JournalPreAllocSizeBytes: 1 << 20,
		WriteCacheBytes:          4 << 20,
		ReadCacheBytes:           4 << 20,
		FlushInterval:            time.Hour,
		DiskCheckInterval:        time.Hour,
		GCWaitTime:               -1,
		MinorCompactionInterval:  -1,
		MajorCompactionInterval:  -1,
		MetadataServers:          []string{c.ZKAddr()},
		// A healthy session must outlive a loaded machine's stalls: the
		// client gives up a connection after two thirds of the timeout
		// without a reply, and a session that expires takes the bookie's
		// registration with it for a moment. A stopped bookie closes its
		// session, so nothing waits for one to expire.
		ZKSessionTimeout: testhost.Scale(10 * time.Second),
		DiskUsage: func(dir string) (entrystore.DirUsage, error) {
			const total = 1 << 30
			return entrystore.DirUsage{Dir: dir, UsedBytes: total * b.usage.Load() / 1_000_000, TotalBytes: total}, nil
		},
	}
	if c.tweak != nil {
		c.tweak(&cfg)
	}
	b.cfg = cfg
	c.start(b)
	c.Bookies = append(c.Bookies, b)
	return b
}

// start starts b's bookie process from its configuration.
func (c *Cluster) start(b *Bookie) {
	c.t.Helper()
	bk, err := bookie.New(b.cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := bk.Start(ctx); err != nil {
		c.t.Fatalf("start bookie: %v", err)
	}
	b.Bookie, b.stopped = bk, false
	c.t.Cleanup(func() { _ = bk.Close() })
}

// Restart stops bookie i (if it is running) and starts it again on the
// same address and directories, with the same id.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	b := c.Bookies[i]
	if !b.stopped {
		c.Stop(i)
	}
	b.cfg.ListenAddr = b.Addr().String()
	c.start(b)
}

// Stop stops bookie i: its connections close and its registration goes.
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	b := c.Bookies[i]
	if err := b.Close(); err != nil {
		c.t.Logf("stop bookie %s: %v", b.ID(), err)
	}
	b.stopped = true
}

// SetReadOnly turns bookie i read-only (its disks report 99% full) or
// writable again; its registration has moved when SetReadOnly returns.
func (c *Cluster) SetReadOnly(i int, readOnly bool) {
	c.t.Helper()
	b := c.Bookies[i]
	b.usage.Store(100_000)
	if readOnly {
		b.usage.Store(990_000)
	}
	if err := b.CheckDisks(); err != nil {
		c.t.Fatal(err)
	}
	if b.ReadOnly() != readOnly {
		c.t.Fatalf("bookie %s: read-only %v, want %v", b.ID(), b.ReadOnly(), readOnly)
	}
}

// IDs returns the ids of the bookies not stopped.
func (c *Cluster) IDs() []string {
	var ids []string
	for _, b := range c.Bookies {
		if !b.stopped {
			ids = append(ids, b.ID())
		}
	}
	return ids
}

// Index returns the index of the bookie with the given id, or -1.
func (c *Cluster) Index(id string) int {
	for i, b := range c.Bookies {
		if b.ID() == id {
			return i
		}
	}
	return -1
}

// String describes the cluster, for test logs.
func (c *Cluster) String() string {
	return fmt.Sprintf("metadata %s, bookies %v", c.ZKAddr(), c.IDs())
}
