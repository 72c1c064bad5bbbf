package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/txnlog"
	"keeper/coordination/zkcore"
	"keeper/coordination/zkproto"
	"keeper/internal/vfs"
	"keeper/internal/vfs/errorfs"
)

// faultWriters are sessions that keep writing while the disk fails. Once
// the test raises fenced (after it saw the server stop writes), a write
// sent afterwards must never be acknowledged.
type faultWriters struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	conns   []*zk.Conn
	acks    *ackLog
	fenced  atomic.Bool
	refused atomic.Int64 // NotReadOnly answers

	mu         sync.Mutex
	violations []string          // mu guards: writes acknowledged though sent after the fence
	oddErrors  []string          // mu guards: errors other than the expected ones
	unknown    map[string]string // mu guards: creates whose connection closed in flight, path -> data
}

func startFaultWriters(t *testing.T, addr string, n int) *faultWriters {
	t.Helper()
	w := &faultWriters{stop: make(chan struct{}), acks: newAckLog()}
	for i := range n {
		c, _ := dialZK(t, 10*time.Second, addr)
		w.conns = append(w.conns, c)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.run(c, i)
		}()
	}
	return w
}

func (w *faultWriters) run(c *zk.Conn, i int) {
	for k := 0; ; k++ {
		select {
		case <-w.stop:
			return
		default:
		}
		fenced := w.fenced.Load()
		path, data := fmt.Sprintf("/w/f-%d-%d", i, k), strconv.Itoa(k)
		_, err := c.Create(path, []byte(data), 0, openACL)
		switch {
		case err == nil:
			w.acks.ackCreate(path, data)
			if fenced {
				w.note(&w.violations, "create "+path+" was acknowledged after the server stopped writes")
			}
		case isNotReadOnly(err):
			w.refused.Add(1)
		case errors.Is(err, zk.ErrConnectionClosed):
			// The server closed the connection while the write was in
			// flight: its outcome is unknown, as ZooKeeper clients expect.
			w.mu.Lock()
			if w.unknown == nil {
				w.unknown = map[string]string{}
			}
			w.unknown[path] = data
			w.mu.Unlock()
		case isFinal(err):
			return
		default:
			w.note(&w.oddErrors, fmt.Sprintf("create %s: %v", path, err))
		}
	}
}

func (w *faultWriters) note(list *[]string, s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	*list = append(*list, s)
}

func (w *faultWriters) halt() {
	close(w.stop)
	for _, c := range w.conns {
		c.Close()
	}
	w.wg.Wait()
}

// isNotReadOnly reports whether go-zk got the NotReadOnly (-119) code,
// which it has no error value for.
func isNotReadOnly(err error) bool {
	return err != nil && err.Error() == fmt.Sprintf("unknown error: %d", zkproto.CodeNotReadOnly)
}

// writesFailed reports the storage error that stopped s's writes.
func writesFailed(s *Server) error {
	var err error
	s.Inspect(func(core *zkcore.Server) { err = core.WritesFailed() })
	return err
}

// TestDiskFaultStopsWrites breaks the log's disk under concurrent writers:
// the server stops acknowledging writes, answers later ones NotReadOnly,
// keeps serving reads from the tree it had, and a restart on what the disk
// durably holds (and on the disk as the failure left it) has every write
// that was acknowledged.
func TestDiskFaultStopsWrites(t *testing.T) {
	tests := []struct {
		name   string
		inject func(*errorfs.FS)
		want   error
	}{
		{"disk full", func(f *errorfs.FS) { f.LimitSpace(3000) }, syscall.ENOSPC},
		{"log fdatasync fails", func(f *errorfs.FS) {
			f.Add(errorfs.Rule{Ops: errorfs.OpSyncData | errorfs.OpSync, PathContains: "/log."})
		}, syscall.EIO},
		{"log directory fsync fails", func(f *errorfs.FS) {
			// The first sync of each new log file syncs its directory; a
			// snapshot every ~20 txns rolls the log soon.
			f.Add(errorfs.Rule{Ops: errorfs.OpSyncDir})
		}, syscall.EIO},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			efs := errorfs.Wrap(mem)
			mut := func(c *Config) { c.Storage.SnapCount = 40 }
			s := mustStartDurable(t, durableConfig(efs, mut))
			admin := zkOpen(t, s)
			prepareWriters(t, admin, 1)
			pre := writeSequentially(t, admin, "pre", 20)
			w := startFaultWriters(t, s.Addr().String(), 6)
			waitAcks(t, w.acks, 200)

			tc.inject(efs)
			eventually(t, waitTimeout, func() bool { return writesFailed(s) != nil }, "writes to stop")
			if err := writesFailed(s); !errors.Is(err, tc.want) || !errors.Is(err, errorfs.ErrInjected) {
				t.Fatalf("writes stopped with %v, want the injected %v", err, tc.want)
			}
			served := inspectImage(t, s)
			w.fenced.Store(true)
			eventually(t, waitTimeout, func() bool { return w.refused.Load() >= 12 }, "writes to be refused")

			// Reads on a session that had no write in flight still work,
			// and its own writes are refused too.
			if data, _, err := admin.Get("/s/pre-7"); err != nil || string(data) != "7" {
				t.Fatalf("read after the failure: %q %v", data, err)
			}
			if _, err := admin.Create("/after", nil, 0, openACL); !isNotReadOnly(err) {
				t.Fatalf("write after the failure: %v, want NotReadOnly", err)
			}
			w.halt()
			w.mu.Lock()
			violations, odd, unknown := w.violations, w.oddErrors, w.unknown
			w.mu.Unlock()
			if len(violations) > 0 || len(odd) > 0 {
				t.Fatalf("after the failure: %d writes acknowledged %v; unexpected errors %v",
					len(violations), violations[:min(3, len(violations))], odd[:min(3, len(odd))])
			}
			if d := diffImages(served, inspectImage(t, s)); d != "" {
				t.Fatalf("the tree changed after writes stopped:\n%s", d)
			}
			s.Close()
			t.Logf("%d writes acknowledged before the failure, %d refused after it", w.acks.acked(), w.refused.Load())

			pre.merge(w.acks)
			checkRestartsAfterFailure(t, mem, served, unknown, pre, mut)
		})
	}
}

// checkRestartsAfterFailure restarts on what a power loss would leave of
// mem, which must be the tree served after the failure, plus at most some
// of the creates whose outcome the clients were told is unknown (their
// connection closed in flight: the failing batch can be on disk after all,
// when another directory sync made its new log file's entry durable first),
// and on mem as the failure left it (unsynced writes included): both hold
// every acknowledged write.
func checkRestartsAfterFailure(t *testing.T, mem *vfs.MemFS, served treeImage, unknown map[string]string,
	acks *ackLog, mut func(*Config)) {
	t.Helper()
	s := mustStartDurable(t, durableConfig(mem.CrashClone(nil), mut))
	crashed := withoutUnknown(t, inspectImage(t, s), served, unknown)
	if d := diffImages(served, crashed); d != "" {
		t.Fatalf("after a crash the tree differs from the one served after the failure:\n%s", d)
	}
	checkAcked(t, s, acks)
	s.Close()
	s = mustStartDurable(t, durableConfig(mem, mut))
	checkAcked(t, s, acks)
}

// TestDiskFaultBeforeFirstWrite fails the very first log sync: the session's
// own createSession cannot be made durable, so the client gets no session,
// and nothing is acknowledged.
func TestDiskFaultBeforeFirstWrite(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.Wrap(mem)
	efs.Add(errorfs.Rule{Ops: errorfs.OpSyncData | errorfs.OpSync, PathContains: "/log."})
	s := mustStartDurable(t, durableConfig(efs))
	c, _, err := zk.Connect([]string{s.Addr().String()}, 10*time.Second, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	eventually(t, waitTimeout, func() bool { return writesFailed(s) != nil }, "writes to stop")
	if c.State() == zk.StateHasSession {
		t.Fatal("a session was established though its createSession never reached the disk")
	}
	// Nothing was applied, and the server still answers.
	var last int64
	s.Inspect(func(core *zkcore.Server) { last = int64(core.LastZxid()) })
	if last != 0 {
		t.Fatalf("last zxid %#x after a failed first write", last)
	}
	if reply := fourLetterWord(t, s.Addr().String(), "ruok"); reply != "imok" {
		t.Fatalf("ruok after the failure: %q", reply)
	}
}

// fourLetterWord sends a four-letter word and returns the reply.
func fourLetterWord(t *testing.T, addr, word string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitTimeout))
	if _, err := c.Write([]byte(word)); err != nil {
		t.Fatal(err)
	}
	reply, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(reply)
}

// TestSnapshotFailureKeepsWriting makes every snapshot write after the
// first (snapshot.0, which start-up writes into a fresh directory) fail: a
// snapshot is an optimisation, the log still holds every txn, so writes go
// on and a restart replays the whole log.
func TestSnapshotFailureKeepsWriting(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.Wrap(mem)
	var logs logBuffer
	s := mustStartDurable(t, durableConfig(efs, logTo(&logs), func(c *Config) { c.Storage.SnapCount = 20 }))
	efs.Add(errorfs.Rule{Ops: errorfs.OpCreate | errorfs.OpWrite, PathContains: "snapshot", Err: syscall.ENOSPC})
	acks := writeSequentially(t, zkOpen(t, s), "n", 150)
	if err := writesFailed(s); err != nil {
		t.Fatalf("a failed snapshot stopped writes: %v", err)
	}
	eventually(t, waitTimeout, func() bool { return strings.Contains(logs.String(), "snapshot failed") }, "a failed snapshot to be logged")
	before := inspectImage(t, s)
	s.Close()
	if infos := snapshots(t, mem); len(infos) != 1 || infos[0].Zxid != 0 {
		t.Fatalf("snapshots %v exist though every write of one after snapshot.0 failed", infos)
	}
	s = mustStartDurable(t, durableConfig(mem.CrashClone(nil)))
	if d := diffImages(before, inspectImage(t, s)); d != "" {
		t.Fatalf("tree after restart differs:\n%s", d)
	}
	checkAcked(t, s, acks)
}

// TestSnapshotCreateFailureEndsTheWalk: when the snapshot file cannot even
// be created, nobody reads the walk's nodes; the writer must still end the
// walk before the loop hears of the failure. Otherwise the walker, a node
// per step, fills the job's chunks and waits forever (Close with it), while
// the loop starts the next snapshot's walk of the same tree beside it
// (a data race under -race: the loop changed the tree unguarded).
func TestSnapshotCreateFailureEndsTheWalk(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.Wrap(mem)
	var logs logBuffer
	s := mustStartDurable(t, durableConfig(efs, logTo(&logs), func(c *Config) {
		c.Storage.SnapCount = 20
		c.Storage.SnapshotStepNodes = 1 // many more steps than the job has chunks
	}))
	efs.Add(errorfs.Rule{Ops: errorfs.OpCreate, PathContains: "snapshot", Err: syscall.ENOSPC})
	acks := writeSequentially(t, zkOpen(t, s), "n", 200)
	if err := writesFailed(s); err != nil {
		t.Fatalf("a failed snapshot stopped writes: %v", err)
	}
	eventually(t, waitTimeout, func() bool { return strings.Count(logs.String(), "snapshot failed") >= 2 },
		"two failed snapshots to be logged")
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(waitTimeout):
		t.Fatal("Close still waits for a failed snapshot's walker")
	}
	s = mustStartDurable(t, durableConfig(mem.CrashClone(nil)))
	checkAcked(t, s, acks)
}

// ---------------------------------------------------------------------------
// File surgery.

// flipBit inverts the lowest bit of the byte at off in the file at path,
// durably.
func flipBit(t *testing.T, fs vfs.FS, path string, off int64) {
	t.Helper()
	f, err := fs.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 1
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// recordOffsets returns where each record of a log file starts, and where
// the written data ends.
func recordOffsets(t *testing.T, fs vfs.FS, path string) (offs []int64, end int64) {
	t.Helper()
	data, err := vfs.ReadFile(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	off := int64(txnlog.FileHeaderBytes)
	for off+12 <= int64(len(data)) {
		length := int64(binary.BigEndian.Uint32(data[off+8:]))
		if length == 0 {
			break
		}
		offs = append(offs, off)
		off += txnlog.RecordOverheadBytes + length
	}
	return offs, off
}

// lastLogFile returns the path of the log's last file.
func lastLogFile(t *testing.T, fs vfs.FS) string {
	t.Helper()
	files, err := txnlog.Files(fs, durableDataDir)
	if err != nil || len(files) == 0 {
		t.Fatalf("log files: %v %v", files, err)
	}
	return files[len(files)-1].Path
}

// patchFile writes b at off in the file at path, durably.
func patchFile(t *testing.T, fs vfs.FS, path string, off int64, b []byte) {
	t.Helper()
	f, err := fs.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// truncateFile cuts the file at path to size bytes, durably.
func truncateFile(t *testing.T, fs vfs.FS, path string, size int64) {
	t.Helper()
	f, err := fs.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------------------
// Damaged files.

// logHistory writes 20 nodes one at a time through a server on a fresh
// MemFS (no snapshots: every txn is in one log file) and closes it.
func logHistory(t *testing.T) (*vfs.MemFS, *ackLog, string) {
	t.Helper()
	mem := vfs.NewMem()
	s := mustStartDurable(t, durableConfig(mem))
	acks := writeSequentially(t, zkOpen(t, s), "c", 20)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return mem, acks, lastLogFile(t, mem)
}

// txnlogPayloadPathOffset points into a create record's path: after the
// 32-byte txn header and the path's 4-byte length.
const txnlogPayloadPathOffset = 32 + 4 + 2

// TestTornLogTailRepaired leaves the start of a record after the last one,
// as a crash in the middle of an append does: start-up cuts it off, keeps
// everything before it, says where, and the log goes on working.
func TestTornLogTailRepaired(t *testing.T) {
	header := binary.BigEndian.AppendUint64(nil, 0x1234_5678) // checksum
	header = binary.BigEndian.AppendUint32(header, 40)        // length
	tests := []struct {
		name string
		tail []byte
	}{
		{"part of a record header", header[:7]},
		{"a header and part of the payload", append(slices.Clone(header), bytes.Repeat([]byte{0x11}, 10)...)},
		{"a whole payload but no end marker", append(slices.Clone(header), bytes.Repeat([]byte{0x11}, 40)...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem, acks, path := logHistory(t)
			_, end := recordOffsets(t, mem, path)
			patchFile(t, mem, path, end, tc.tail)

			var logs logBuffer
			s := mustStartDurable(t, durableConfig(mem, logTo(&logs)))
			want := fmt.Sprintf("offset=%d", end)
			if !strings.Contains(logs.String(), "truncated a torn record") || !strings.Contains(logs.String(), want) {
				t.Fatalf("no repair at %s logged:\n%s", want, logs.String())
			}
			checkAcked(t, s, acks)
			if fi, err := mem.Stat(path); err != nil || fi.Size() != end {
				t.Fatalf("%s after repair: %v (err %v), want %d bytes", path, fi, err, end)
			}
			more := writeSequentially(t, zkOpen(t, s), "u", 5)
			s.Close()
			s = mustStartDurable(t, durableConfig(mem))
			checkAcked(t, s, acks)
			checkAcked(t, s, more)
		})
	}
}

// TestDamagedLogStopsStart damages a record that may hold acknowledged
// data: the server refuses to start, and the error names the file and the
// record's offset. Damage to the last record counts: a record whose end
// marker is in place was written whole, so it may have been acknowledged.
func TestDamagedLogStopsStart(t *testing.T) {
	tests := []struct {
		name   string
		record func(n int) int // which record, of n
		at     int64           // offset of the damage within the record
	}{
		{"a bit of a middle record's payload", func(n int) int { return n / 2 }, 12 + txnlogPayloadPathOffset},
		{"a bit of a middle record's checksum", func(n int) int { return n / 2 }, 3},
		{"a bit of a middle record's length", func(n int) int { return n / 2 }, 11},
		{"a bit of the first record's payload", func(int) int { return 0 }, 12 + 20},
		{"a bit of the last record's payload", func(n int) int { return n - 1 }, 12 + 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem, _, path := logHistory(t)
			offs, _ := recordOffsets(t, mem, path)
			bad := offs[tc.record(len(offs))]
			flipBit(t, mem, path, bad+tc.at)

			_, err := startDurable(t, durableConfig(mem))
			var rerr *txnlog.RecordError
			if !errors.Is(err, txnlog.ErrCorrupt) || !errors.As(err, &rerr) {
				t.Fatalf("start: %v, want a corrupt-record error", err)
			}
			if rerr.File != path || rerr.Offset != bad {
				t.Fatalf("error names %s at %d, want %s at %d: %v", rerr.File, rerr.Offset, path, bad, err)
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, strconv.FormatInt(bad, 10)) {
				t.Fatalf("message %q does not name the file and offset", msg)
			}
		})
	}
	t.Run("the file header", func(t *testing.T) {
		mem, _, path := logHistory(t)
		flipBit(t, mem, path, 1)
		_, err := startDurable(t, durableConfig(mem))
		var rerr *txnlog.RecordError
		if !errors.Is(err, txnlog.ErrCorrupt) || !errors.As(err, &rerr) || rerr.File != path || rerr.Offset != 0 {
			t.Fatalf("start: %v, want a corrupt header in %s at offset 0", err, path)
		}
	})
}

// snapshotHistory makes a server write several snapshots and returns its
// filesystem and final tree, with the server closed.
func snapshotHistory(t *testing.T) (*vfs.MemFS, treeImage) {
	t.Helper()
	mem := vfs.NewMem()
	s := mustStartDurable(t, durableConfig(mem, func(c *Config) { c.Storage.SnapCount = 20 }))
	c := zkOpen(t, s)
	// A snapshot becomes due only while none is running, and writes can
	// outpace snapshots: write in rounds until there are three.
	for round := 0; len(snapshots(t, mem)) < 3; round++ {
		if round == 20 {
			t.Fatalf("only %d snapshots after %d rounds of writes", len(snapshots(t, mem)), round)
		}
		writeSequentially(t, c, fmt.Sprintf("h%d", round), 30)
		waitSnapshotIdle(t, s)
	}
	img := inspectImage(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return mem, img
}

// snapshotDamage are ways a snapshot file gets damaged.
var snapshotDamage = []struct {
	name   string
	damage func(t *testing.T, fs vfs.FS, path string, size int64)
}{
	{"a bit in the middle", func(t *testing.T, fs vfs.FS, path string, size int64) { flipBit(t, fs, path, size/2) }},
	{"a bit of the magic", func(t *testing.T, fs vfs.FS, path string, size int64) { flipBit(t, fs, path, 0) }},
	{"a bit of the seal", func(t *testing.T, fs vfs.FS, path string, size int64) { flipBit(t, fs, path, size-6) }},
	{"torn in half", func(t *testing.T, fs vfs.FS, path string, size int64) { truncateFile(t, fs, path, size/2) }},
	{"empty", func(t *testing.T, fs vfs.FS, path string, size int64) { truncateFile(t, fs, path, 0) }},
	{"bytes after the last seal", func(t *testing.T, fs vfs.FS, path string, size int64) {
		patchFile(t, fs, path, size, []byte{0, 0, 0, 1, '/'})
	}},
}

// TestDamagedSnapshotSkipped damages the newest snapshot: start-up skips
// it, says so, and restores the same tree from the one before and a
// longer replay.
func TestDamagedSnapshotSkipped(t *testing.T) {
	for _, tc := range snapshotDamage {
		t.Run(tc.name, func(t *testing.T) {
			mem, before := snapshotHistory(t)
			infos := snapshots(t, mem)
			tc.damage(t, mem, filepath.Join(durableSnapDir, infos[0].Name), infos[0].Size)

			var logs logBuffer
			s := mustStartDurable(t, durableConfig(mem, logTo(&logs)))
			out := logs.String()
			if !strings.Contains(out, "skipped unusable snapshot") || !strings.Contains(out, "file="+infos[0].Name) {
				t.Fatalf("the damaged snapshot was not reported as skipped:\n%s", out)
			}
			if !strings.Contains(out, "loaded snapshot") || !strings.Contains(out, "file="+infos[1].Name) {
				t.Fatalf("the older snapshot %s was not loaded:\n%s", infos[1].Name, out)
			}
			if d := diffImages(before, inspectImage(t, s)); d != "" {
				t.Fatalf("tree differs:\n%s", d)
			}
		})
	}
}

// TestDamagedSnapshotWithoutOlderLog damages the newest snapshot after a
// purge removed what came before it: there is no way to rebuild the tree,
// and the server must say so instead of starting with a partial one.
func TestDamagedSnapshotWithoutOlderLog(t *testing.T) {
	mem, _ := snapshotHistory(t)
	res, err := Purge(mem, durableDataDir, "", 1, 0, nil)
	if err != nil || len(res.Logs) == 0 {
		t.Fatalf("purge: %+v %v", res, err)
	}
	infos := snapshots(t, mem)
	flipBit(t, mem, filepath.Join(durableSnapDir, infos[0].Name), infos[0].Size/2)

	_, err = startDurable(t, durableConfig(mem))
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("start: %v, want an error about missing txns", err)
	}
}

// withoutUnknown removes from crashed the creates of unknown outcome that
// it holds beyond served, with what they changed in their parents, the
// digest and the last zxid, so that it compares with served.
func withoutUnknown(t *testing.T, crashed, served treeImage, unknown map[string]string) treeImage {
	t.Helper()
	var extra []string
	for p, n := range crashed.Nodes {
		if _, ok := served.Nodes[p]; ok {
			continue
		}
		if data, ok := unknown[p]; ok && string(n.Data) == data {
			extra = append(extra, p)
		}
	}
	if len(extra) == 0 {
		return crashed
	}
	t.Logf("%d creates of unknown outcome are on disk after the crash: %v", len(extra), extra)
	for _, p := range extra {
		delete(crashed.Nodes, p)
		parent := path.Dir(p)
		pn := crashed.Nodes[parent]
		pn.Children = slices.DeleteFunc(slices.Clone(pn.Children), func(c string) bool { return c == path.Base(p) })
		if sn, ok := served.Nodes[parent]; ok && slices.Equal(pn.Children, sn.Children) {
			pn.Stat = sn.Stat // cversion and pzxid moved with the extra creates
		}
		crashed.Nodes[parent] = pn
	}
	crashed.Digest, crashed.LastZxid = served.Digest, served.LastZxid
	return crashed
}

func TestWithoutUnknown(t *testing.T) {
	node := func(data string, cversion int32, kids ...string) znodeImage {
		return znodeImage{Data: []byte(data), Stat: zkproto.StatPersisted{Cversion: cversion}, Children: kids}
	}
	served := treeImage{Nodes: map[string]znodeImage{"/w": node("", 1, "a"), "/w/a": node("0", 0)},
		Digest: 1, LastZxid: 5}
	crashed := func() treeImage {
		return treeImage{Nodes: map[string]znodeImage{"/w": node("", 3, "a", "b", "c"), "/w/a": node("0", 0),
			"/w/b": node("1", 0), "/w/c": node("2", 0)}, Digest: 2, LastZxid: 7}
	}
	got := withoutUnknown(t, crashed(), served, map[string]string{"/w/b": "1", "/w/c": "2"})
	if d := diffImages(served, got); d != "" {
		t.Fatalf("unknown creates not taken out:\n%s", d)
	}
	// A node beyond served that no unknown create explains stays a difference,
	// and so does an unknown path holding other data.
	got = withoutUnknown(t, crashed(), served, map[string]string{"/w/b": "1", "/w/c": "other"})
	if d := diffImages(served, got); !strings.Contains(d, "unexpected /w/c") {
		t.Fatalf("diff %q, want /w/c unexpected", d)
	}
}

// TestForceSyncOff: with zoo.cfg's forceSync=no (StorageConfig.NoSync;
// TestConfigFromZooStorage maps the key) the log's batches are written
// without a sync before their writes are answered; the txns are in the
// file for a restart.
func TestForceSyncOff(t *testing.T) {
	mem := vfs.NewMem()
	efs := errorfs.Wrap(mem)
	var logs logBuffer
	s := mustStartDurable(t, durableConfig(efs, logTo(&logs), func(c *Config) { c.Storage.NoSync = true }))
	if !strings.Contains(logs.String(), "forceSync=no") {
		t.Errorf("no warning that writes are not synced; log:\n%s", logs.String())
	}
	c := zkOpen(t, s)
	if _, err := c.Create("/first", nil, 0, openACL); err != nil { // the log's first file, synced with its directory
		t.Fatal(err)
	}
	syncs := efs.Count(errorfs.OpAnySync)
	acks := writeSequentially(t, c, "n", 50)
	if n := efs.Count(errorfs.OpAnySync) - syncs; n != 0 {
		t.Errorf("%d syncs for 50 writes with forceSync=no", n)
	}
	before := inspectImage(t, s)
	s.Close()
	s = mustStartDurable(t, durableConfig(mem))
	if d := diffImages(before, inspectImage(t, s)); d != "" {
		t.Fatalf("tree after restart differs:\n%s", d)
	}
	checkAcked(t, s, acks)
}
