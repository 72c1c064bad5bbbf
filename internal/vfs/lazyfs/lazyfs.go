package lazyfs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"keeper/internal/vfs"
)

// DefaultMaxPendingBytes is Options.MaxPendingBytes's default: well above
// what keeper writes to one file between two syncs (a write cache flush
// of a bookie's entry log is the largest), so that it rarely bites.
const DefaultMaxPendingBytes = 64 << 20

// ErrCrashed is returned by every operation of an FS, and of its files,
// after Crash.
var ErrCrashed = errors.New("lazyfs: crashed")

// Options shapes an FS. The zero value keeps every un-synced change in
// memory until a sync or a close.
type Options struct {
	// Writeback is the chance, after each write, that the FS writes a
	// random prefix of the file's pending changes to the wrapped FS (not
	// synced), the last one possibly torn (see the package doc). 0: never.
	Writeback float64
	// Rand draws the writebacks; required when Writeback is above 0.
	// The FS serialises its use.
	Rand *rand.Rand
	// MaxPendingBytes bounds the pending bytes of one file: past it,
	// every pending change of the file is written back (not synced).
	// 0 means DefaultMaxPendingBytes.
	MaxPendingBytes int64
	// UndoDir, if set, is a directory of the wrapped FS (outside every
	// directory the program lists) where each sync keeps an undo record
	// until the wrapped sync returns, so that Recover, at the next start,
	// can make a kill during a sync lose what a power loss would (see
	// undo.go). Empty: a sync, once begun, keeps all of its changes.
	UndoDir string
}

// Validate reports options that cannot work.
func (o Options) Validate() error {
	switch {
	case o.Writeback < 0 || o.Writeback > 1:
		return fmt.Errorf("lazyfs: Writeback %v outside [0, 1]", o.Writeback)
	case o.Writeback > 0 && o.Rand == nil:
		return errors.New("lazyfs: Writeback needs Rand")
	case o.MaxPendingBytes < 0:
		return fmt.Errorf("lazyfs: MaxPendingBytes %d is negative", o.MaxPendingBytes)
	}
	return nil
}

// Stats counts what an FS wrote back before a sync.
type Stats struct {
	// Writebacks counts the random writebacks (Options.Writeback) that
	// wrote something; Torn counts those that cut a write short.
	Writebacks, Torn int64
	// Overflows counts the writebacks MaxPendingBytes forced.
	Overflows int64
}

// FS wraps a vfs.FS and keeps files' un-synced changes in memory (see the
// package doc). It and its files are safe for concurrent use.
type FS struct {
	inner      vfs.FS
	writeback  float64
	maxPending int64
	undoDir    string
	undoSeq    atomic.Uint64
	crashed    atomic.Bool

	// mu guards nodes, live and every node's name. Lock order: FS.mu, then
	// a node's mu.
	mu    sync.Mutex
	nodes map[string]*node   // by cleaned path
	live  map[*node]struct{} // every node with open handles, removed ones included
	locks map[*lock]struct{} // the locks Lock holds, which Crash releases

	rngMu sync.Mutex // guards rng and stats
	rng   *rand.Rand
	stats Stats
}

// Wrap returns inner behind an FS with the zero Options: un-synced
// changes stay in memory until a sync or a close, and nothing is written
// back early unless a file's pending bytes pass DefaultMaxPendingBytes.
func Wrap(inner vfs.FS) *FS {
	f, err := New(inner, Options{})
	if err != nil {
		panic(err) // the zero Options are valid
	}
	return f
}

// New returns inner behind an FS with opts.
func New(inner vfs.FS, opts Options) (*FS, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.MaxPendingBytes == 0 {
		opts.MaxPendingBytes = DefaultMaxPendingBytes
	}
	return &FS{inner: inner, writeback: opts.Writeback, maxPending: opts.MaxPendingBytes, undoDir: opts.UndoDir,
		rng: opts.Rand, nodes: map[string]*node{}, live: map[*node]struct{}{}, locks: map[*lock]struct{}{}}, nil
}

// Stats returns what the FS has written back early so far.
func (f *FS) Stats() Stats {
	f.rngMu.Lock()
	defer f.rngMu.Unlock()
	return f.stats
}

// PendingBytes returns the bytes held in memory for every open file.
func (f *FS) PendingBytes() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var total int64
	for n := range f.live {
		n.mu.RLock()
		total += n.pendingBytes
		n.mu.RUnlock()
	}
	return total
}

// Crash simulates a SIGKILL: every pending change is dropped, every
// wrapped handle closed without writing anything, every lock taken
// through f released (as the kernel releases a dead process's), and every
// later call on f or on its files returns ErrCrashed. The wrapped FS then
// holds what a killed process leaves; reopen the files through it.
func (f *FS) Crash() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashed.Store(true)
	for l := range f.locks {
		_ = l.inner.Close() // the process is dead: its locks go
	}
	f.locks = map[*lock]struct{}{}
	for n := range f.live {
		n.mu.Lock()
		for _, h := range n.files {
			h.closed.Store(true)
			_ = h.inner.Close() // nothing is written: the process is dead
		}
		n.files, n.writers = nil, nil
		n.resetLocked()
		n.mu.Unlock()
	}
	f.nodes, f.live = map[string]*node{}, map[*node]struct{}{}
}

func (f *FS) usable() error {
	if f.crashed.Load() {
		return ErrCrashed
	}
	return nil
}

// Create implements vfs.FS. The creation and the truncation of an
// existing file reach the wrapped FS at once; pending changes of the file
// from other handles are dropped with its old contents.
func (f *FS) Create(name string) (vfs.File, error) {
	return f.open(name, modeCreate)
}

// Open implements vfs.FS.
func (f *FS) Open(name string) (vfs.File, error) {
	return f.open(name, modeRead)
}

// OpenReadWrite implements vfs.FS.
func (f *FS) OpenReadWrite(name string) (vfs.File, error) {
	return f.open(name, modeReadWrite)
}

// openMode says how open opens a file.
type openMode int

const (
	modeRead      openMode = iota // Open
	modeReadWrite                 // OpenReadWrite
	modeCreate                    // Create
)

func (f *FS) open(name string, mode openMode) (vfs.File, error) {
	if err := f.usable(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var inner vfs.File
	var err error
	switch mode {
	case modeRead:
		inner, err = f.inner.Open(name)
	case modeReadWrite:
		inner, err = f.inner.OpenReadWrite(name)
	default:
		inner, err = f.inner.Create(name)
	}
	if err != nil {
		return nil, err
	}
	writable := mode != modeRead
	key := filepath.Clean(name)
	n := f.nodes[key]
	if n == nil {
		info, err := inner.Stat()
		if err != nil {
			_ = inner.Close() // the stat error is the one to report
			return nil, err
		}
		n = &node{name: key, innerSize: info.Size(), size: info.Size()}
		f.nodes[key] = n
		f.live[n] = struct{}{}
	}
	h := &file{fs: f, node: n, inner: inner, name: name, writable: writable}
	n.mu.Lock()
	if mode == modeCreate {
		n.resetLocked()
	}
	n.files = append(n.files, h)
	if writable {
		n.writers = append(n.writers, h)
	}
	n.mu.Unlock()
	return h, nil
}

// closeFile closes h: the last writable handle of a file writes its
// pending changes to the wrapped FS first, without syncing them.
func (f *FS) closeFile(h *file) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed.Load() {
		return ErrCrashed // Crash closed the wrapped handle
	}
	n := h.node
	n.mu.Lock()
	var err error
	if h.writable && len(n.writers) == 1 {
		if err = n.flushLocked(); err != nil {
			// Nothing can write the rest any more: it is lost, as dirty
			// pages a failed writeback dropped are.
			n.pending, n.pendingBytes = nil, 0
			if info, serr := h.inner.Stat(); serr == nil {
				n.innerSize = info.Size()
			}
			n.size = n.innerSize
		}
	}
	n.dropLocked(h)
	last := len(n.files) == 0
	n.mu.Unlock()
	if cerr := h.inner.Close(); err == nil {
		err = cerr
	}
	if last {
		delete(f.live, n)
		if n.name != "" && f.nodes[n.name] == n {
			delete(f.nodes, n.name)
		}
	}
	return err
}

// Remove implements vfs.FS. Open handles of a removed file keep working.
func (f *FS) Remove(name string) error {
	if err := f.usable(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.inner.Remove(name); err != nil {
		return err
	}
	f.forget(filepath.Clean(name))
	return nil
}

// forget detaches the node at key from its name. Caller holds f.mu.
func (f *FS) forget(key string) {
	if n := f.nodes[key]; n != nil {
		n.name = ""
		delete(f.nodes, key)
	}
}

// Rename implements vfs.FS. The file's pending changes move with it.
func (f *FS) Rename(oldname, newname string) error {
	if err := f.usable(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.inner.Rename(oldname, newname); err != nil {
		return err
	}
	oldKey, newKey := filepath.Clean(oldname), filepath.Clean(newname)
	if oldKey == newKey {
		return nil
	}
	n := f.nodes[oldKey]
	f.forget(newKey)
	if n != nil {
		delete(f.nodes, oldKey)
		n.name = newKey
		f.nodes[newKey] = n
	}
	return nil
}

// MkdirAll implements vfs.FS.
func (f *FS) MkdirAll(dir string, perm os.FileMode) error {
	if err := f.usable(); err != nil {
		return err
	}
	return f.inner.MkdirAll(dir, perm)
}

// List implements vfs.FS.
func (f *FS) List(dir string) ([]string, error) {
	if err := f.usable(); err != nil {
		return nil, err
	}
	return f.inner.List(dir)
}

// Stat implements vfs.FS; the size of an open file counts its pending
// changes.
func (f *FS) Stat(name string) (os.FileInfo, error) {
	if err := f.usable(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	info, err := f.inner.Stat(name)
	if err != nil {
		return nil, err
	}
	if n := f.nodes[filepath.Clean(name)]; n != nil && !info.IsDir() {
		n.mu.RLock()
		defer n.mu.RUnlock()
		return sizedInfo{info, n.size}, nil
	}
	return info, nil
}

// SyncDir implements vfs.FS: directory entries already reached the
// wrapped FS, so it passes through.
func (f *FS) SyncDir(dir string) error {
	if err := f.usable(); err != nil {
		return err
	}
	return f.inner.SyncDir(dir)
}

// sizedInfo is a FileInfo whose size counts pending changes.
type sizedInfo struct {
	os.FileInfo
	size int64
}

func (i sizedInfo) Size() int64 { return i.size }

// maybeWriteBackLocked writes some of n's pending changes back through
// h after a write: all of them past MaxPendingBytes, else a random prefix
// with the chance Options.Writeback. A failure is kept for the next sync.
// Caller holds n.mu.
func (f *FS) maybeWriteBackLocked(n *node, h *file) {
	var err error
	switch {
	case n.pendingBytes > f.maxPending:
		f.count(func(s *Stats) { s.Overflows++ })
		err = n.writeBackLocked(h.inner, len(n.pending), 0)
	case f.writeback > 0:
		k, torn, ok := f.pick(n.pending)
		if ok {
			err = n.writeBackLocked(h.inner, k, torn)
		}
	}
	if err != nil && n.writebackErr == nil {
		n.writebackErr = err
	}
}

// pick decides whether to write back now, and how much: the first k
// changes and torn bytes of change k.
func (f *FS) pick(pending []change) (k, torn int, ok bool) {
	f.rngMu.Lock()
	defer f.rngMu.Unlock()
	if len(pending) == 0 || f.rng.Float64() >= f.writeback {
		return 0, 0, false
	}
	k = f.rng.IntN(len(pending) + 1)
	if k < len(pending) && !pending[k].trunc && len(pending[k].data) > 1 {
		torn = f.rng.IntN(len(pending[k].data)) // a strict prefix: the write tore
	}
	if k == 0 && torn == 0 {
		return 0, 0, false
	}
	f.stats.Writebacks++
	if torn > 0 {
		f.stats.Torn++
	}
	return k, torn, true
}

func (f *FS) count(add func(*Stats)) {
	f.rngMu.Lock()
	defer f.rngMu.Unlock()
	add(&f.stats)
}
