package bookie

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/internal/vfs"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// createLedgerZnode writes a ledger's metadata znode (its content does not
// matter to a bookie), with its parents.
func createLedgerZnode(t *testing.T, zc *zkclient.Session, id int64) {
	t.Helper()
	path := metadata.LayoutHierarchical.Path("/ledgers", id)
	parts := strings.Split(path, "/")
	for i := 3; i < len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		if _, _, err := zc.Create(t.Context(), p, nil, zkclient.CreateOptions{}); err != nil && !errors.Is(err, zkproto.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	if _, _, err := zc.Create(t.Context(), path, []byte("metadata"), zkclient.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// logBytes sums the sizes of the entry logs under dirs.
func logBytes(t *testing.T, fsys vfs.FS, dirs []string) int64 {
	t.Helper()
	var total int64
	for _, d := range dirs {
		cur := filepath.Join(d, "current")
		names, err := fsys.List(cur)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.HasSuffix(n, ".log") {
				fi, err := fsys.Stat(filepath.Join(cur, n))
				if err != nil {
					t.Fatal(err)
				}
				total += fi.Size()
			}
		}
	}
	return total
}

// gcEnv is a bookie with one ledger directory and small entry logs, so
// that a few hundred entries fill several of them.
func gcEnv(t *testing.T) (*env, *Bookie, *bookierpc.Client, *zkclient.Session) {
	e := newEnv(t, true)
	e.tweak = func(c *Config) {
		c.LedgerDirs = []string{"/ledgers0"}
		c.EntryLogMaxBytes = 16 << 10
		c.CompactionStepBytes = 4 << 10
	}
	b := e.start()
	return e, b, dial(t, b), e.zkConn()
}

func TestGCDeletesLedgersWhoseMetadataIsGone(t *testing.T) {
	e, b, c, zc := gcEnv(t)
	for _, id := range []int64{1, 2, 3} {
		createLedgerZnode(t, zc, id)
	}
	// Ledger 2 fills logs of its own; 1 and 3 are interleaved elsewhere.
	addEntries(t, c, 1, 0, 50)
	addEntries(t, c, 2, 0, 300)
	addEntries(t, c, 3, 0, 50)
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	dirs := []string{"/ledgers0"}
	before := logBytes(t, e.fs, dirs)

	// The metadata is intact: nothing is collected.
	rep, err := b.GC()
	if err != nil || rep.LedgersDeleted != 0 || rep.MetadataLedgers != 3 {
		t.Fatalf("GC with intact metadata: %+v %v", rep, err)
	}
	if err := zc.Delete(t.Context(), metadata.LayoutHierarchical.Path("/ledgers", 2), -1); err != nil {
		t.Fatal(err)
	}
	rep, err = b.GC()
	if err != nil || rep.LedgersDeleted != 1 || rep.LogsRemoved == 0 {
		t.Fatalf("GC after deleting ledger 2's metadata: %+v %v", rep, err)
	}
	after := logBytes(t, e.fs, dirs)
	if after >= before || before-after < rep.BytesFreed {
		t.Fatalf("entry logs %d bytes before, %d after, %d reported freed", before, after, rep.BytesFreed)
	}
	_, err = c.Read(ctx(t), 2, 0)
	wantStatus(t, "read of a collected ledger", err, bkproto.StatusCode_ENOLEDGER)
	for e := int64(0); e < 50; e++ {
		checkEntry(t, c, 1, e)
		checkEntry(t, c, 3, e)
	}
	t.Logf("GC freed %d of %d bytes (%d logs)", before-after, before, rep.LogsRemoved)
}

// TestGCKeepsEverythingWhenTheListingFails: an odd znode in the ledger
// tree makes the listing fail, and then nothing is deleted, although a
// ledger's metadata is really gone (docs/bookkeeper-protocol.md Appendix A item 9).
func TestGCKeepsEverythingWhenTheListingFails(t *testing.T) {
	_, b, c, zc := gcEnv(t)
	createLedgerZnode(t, zc, 1)
	createLedgerZnode(t, zc, 2)
	addEntries(t, c, 1, 0, 10)
	addEntries(t, c, 2, 0, 10)
	if err := zc.Delete(t.Context(), metadata.LayoutHierarchical.Path("/ledgers", 2), -1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := zc.Create(t.Context(), "/ledgers/00/0000/not-a-ledger", nil, zkclient.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, err := b.GC()
	if !errors.Is(err, metadata.ErrIncompleteListing) || rep.LedgersDeleted != 0 {
		t.Fatalf("GC over a broken listing: %+v %v", rep, err)
	}
	for e := int64(0); e < 10; e++ {
		checkEntry(t, c, 2, e)
	}
	// Without metadata at all, GC refuses.
	nb := newEnv(t, false).start()
	if _, err := nb.GC(); !errors.Is(err, errNoMetadata) {
		t.Fatalf("GC without metadata: %v", err)
	}
}

// TestCompaction interleaves a live and a dead ledger in the same entry
// logs, collects the dead one, and compacts: the space comes back, the
// live entries read back byte for byte, and adds go on during compaction.
func TestCompaction(t *testing.T) {
	e, b, c, zc := gcEnv(t)
	createLedgerZnode(t, zc, 10)
	createLedgerZnode(t, zc, 11)
	// A checkpoint per round, so that each flush (sorted by ledger)
	// interleaves the two ledgers in the logs.
	for i := int64(0); i < 30; i++ {
		addEntries(t, c, 10, i*10, (i+1)*10)
		addEntries(t, c, 11, i*10, (i+1)*10)
		if err := b.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	if err := zc.Delete(t.Context(), metadata.LayoutHierarchical.Path("/ledgers", 11), -1); err != nil {
		t.Fatal(err)
	}
	if rep, err := b.GC(); err != nil || rep.LedgersDeleted != 1 {
		t.Fatalf("GC: %+v %v", rep, err)
	}
	dirs := []string{"/ledgers0"}
	before := logBytes(t, e.fs, dirs)

	// Half the bytes of each log are dead: above the minor threshold
	// (0.2), below the major one (0.8).
	sealed := sealedLogs(b)
	st, err := b.Compact(false)
	if err != nil || st.LogsCompacted != 0 {
		t.Fatalf("minor compaction of half-live logs: %+v %v", st, err)
	}
	checkUsageBuckets(t, b, sealed, 0)
	createLedgerZnode(t, zc, 12)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // adds during compaction
		defer wg.Done()
		addEntries(t, c, 12, 0, 200)
	}()
	sealed = sealedLogs(b)
	st, err = b.Compact(true)
	wg.Wait()
	if err != nil || st.LogsCompacted == 0 || st.EntriesMoved == 0 {
		t.Fatalf("major compaction: %+v %v", st, err)
	}
	if got, want := gaugeValue(b.m.compactRatio), float64(st.LogsCompacted)/float64(len(sealed)); got != want {
		t.Errorf("ENTRY_LOG_COMPACT_RATIO after the major compaction = %v, want %v", got, want)
	}
	after := logBytes(t, e.fs, dirs)
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	t.Logf("major compaction: %d logs, %d entries moved; logs %d -> %d bytes", st.LogsCompacted, st.EntriesMoved,
		before, after)
	if st.BytesFreed <= st.BytesMoved {
		t.Fatalf("compaction freed %d bytes and moved %d", st.BytesFreed, st.BytesMoved)
	}
	for i := int64(0); i < 300; i++ {
		checkEntry(t, c, 10, i)
	}
	for i := int64(0); i < 200; i++ {
		checkEntry(t, c, 12, i)
	}
	// And after a restart from the compacted files.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := dial(t, e.start())
	for i := int64(0); i < 300; i += 7 {
		checkEntry(t, c2, 10, i)
	}
}

// TestGCOnLongHierarchicalTree: a bookie joining a tree formatted with the
// long hierarchical layout walks it with that layout (from LAYOUT), so GC
// still tells live ledgers from deleted ones.
func TestGCOnLongHierarchicalTree(t *testing.T) {
	e := newEnv(t, true)
	zc := e.zkConn()
	ms, err := metadata.New(zc, metadata.Config{Layout: metadata.LayoutLongHierarchical})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ms.Close)
	if err := ms.Init(ctx(t)); err != nil {
		t.Fatal(err)
	}
	md := metadata.NewOpen([]ledger.BookieID{ledger.BookieID(e.id)}, 1, 1, bkproto.DigestCRC32C, testPassword)
	for _, id := range []int64{1, 2} {
		if _, _, err := ms.Create(ctx(t), id, md); err != nil {
			t.Fatal(err)
		}
	}
	b := e.start()
	c := dial(t, b)
	addEntries(t, c, 1, 0, 10)
	addEntries(t, c, 2, 0, 10)
	if rep, err := b.GC(); err != nil || rep.LedgersDeleted != 0 || rep.MetadataLedgers != 2 {
		t.Fatalf("GC with intact metadata: %+v %v", rep, err)
	}
	if err := ms.Delete(ctx(t), 2, metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if rep, err := b.GC(); err != nil || rep.LedgersDeleted != 1 || rep.MetadataLedgers != 1 {
		t.Fatalf("GC after deleting ledger 2: %+v %v", rep, err)
	}
	_, err = c.Read(ctx(t), 2, 0)
	wantStatus(t, "read of a collected ledger", err, bkproto.StatusCode_ENOLEDGER)
	checkEntry(t, c, 1, 9)
}

// sealedLogs returns the live ratios of the logs a compaction considers:
// sealed, with their ledger maps known.
func sealedLogs(b *Bookie) []float64 {
	var out []float64
	for _, u := range b.store.LogUsage() {
		if u.Sealed && u.Known {
			out = append(out, u.LiveRatio())
		}
	}
	return out
}

// gaugeValue reads a gauge.
func gaugeValue(g prometheus.Gauge) float64 {
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		panic(err)
	}
	return m.GetGauge().GetValue()
}

// checkUsageBuckets: after a compaction of logs with the live ratios
// given, the usage buckets hold each log once, in the 10% band of its
// ratio, and the compact ratio reads ratio.
func checkUsageBuckets(t *testing.T, b *Bookie, ratios []float64, ratio float64) {
	t.Helper()
	if len(ratios) == 0 {
		t.Fatal("no sealed entry logs to bucket")
	}
	total := 0.0
	for i, g := range b.m.usageBuckets {
		n := gaugeValue(g)
		total += n
		lo, hi := float64(i)/10, float64(i+1)/10
		want := 0.0
		for _, r := range ratios {
			if (r >= lo && r < hi) || (i == 9 && r >= 1) {
				want++
			}
		}
		if n != want {
			t.Errorf("bucket le_%d: %v logs, want %v (ratios %v)", (i+1)*10, n, want, ratios)
		}
	}
	if total != float64(len(ratios)) {
		t.Errorf("buckets hold %v logs, want %d", total, len(ratios))
	}
	if got := gaugeValue(b.m.compactRatio); got != ratio {
		t.Errorf("ENTRY_LOG_COMPACT_RATIO = %v, want %v", got, ratio)
	}
}
