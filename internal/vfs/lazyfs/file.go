package lazyfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"keeper/internal/vfs"
)

// file is one open handle. Its reads and writes go through its node,
// shared with every other handle of the same file; the wrapped handle
// inner reads what the wrapped file holds, and writes pending changes
// back. Safe for concurrent use; the Read/Write position is the handle's.
type file struct {
	fs       *FS
	node     *node
	inner    vfs.File
	name     string
	writable bool
	closed   atomic.Bool

	mu  sync.Mutex // guards off
	off int64      // the Read/Write/Seek position
}

var _ io.Seeker = (*file)(nil)

// usable returns the error for an operation on a closed handle or a
// crashed FS.
func (h *file) usable(op string) error {
	if err := h.fs.usable(); err != nil {
		return err
	}
	if h.closed.Load() {
		return &os.PathError{Op: op, Path: h.name, Err: os.ErrClosed}
	}
	return nil
}

// writableErr refuses a change through a handle opened read-only, as the
// kernel does (EBADF for a write, EINVAL for a truncate).
func (h *file) writableErr(op string, errno syscall.Errno) error {
	if err := h.usable(op); err != nil {
		return err
	}
	if !h.writable {
		return &os.PathError{Op: op, Path: h.name, Err: errno}
	}
	return nil
}

// ReadAt implements io.ReaderAt: the file with its pending changes.
func (h *file) ReadAt(p []byte, off int64) (int, error) {
	if err := h.usable("read"); err != nil {
		return 0, err
	}
	h.node.mu.RLock()
	defer h.node.mu.RUnlock()
	return h.node.readAtLocked(h.inner, p, off)
}

// Read implements io.Reader from the handle's position.
func (h *file) Read(p []byte) (int, error) {
	if err := h.usable("read"); err != nil {
		return 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.node.mu.RLock()
	n, err := h.node.readAtLocked(h.inner, p, h.off)
	h.node.mu.RUnlock()
	h.off += int64(n)
	if n > 0 {
		return n, nil // as os.File: the EOF comes with the next call
	}
	return 0, err
}

// Seek implements io.Seeker; io.SeekEnd counts pending changes.
func (h *file) Seek(offset int64, whence int) (int64, error) {
	if err := h.usable("seek"); err != nil {
		return 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var base int64
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		base = h.off
	case io.SeekEnd:
		h.node.mu.RLock()
		base = h.node.size
		h.node.mu.RUnlock()
	default:
		return 0, &os.PathError{Op: "seek", Path: h.name, Err: syscall.EINVAL}
	}
	if base+offset < 0 {
		return 0, &os.PathError{Op: "seek", Path: h.name, Err: syscall.EINVAL}
	}
	h.off = base + offset
	return h.off, nil
}

// WriteAt implements io.WriterAt: the bytes stay in memory until a sync
// (or a writeback).
func (h *file) WriteAt(p []byte, off int64) (int, error) {
	if err := h.writableErr("write", syscall.EBADF); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &os.PathError{Op: "writeat", Path: h.name, Err: errors.New("negative offset")}
	}
	n := h.node
	n.mu.Lock()
	defer n.mu.Unlock()
	n.writeLocked(p, off)
	h.fs.maybeWriteBackLocked(n, h)
	return len(p), nil
}

// Write implements io.Writer at the handle's position.
func (h *file) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, err := h.WriteAt(p, h.off)
	h.off += int64(n)
	return n, err
}

// Truncate implements vfs.File; like a write, it waits for a sync.
func (h *file) Truncate(size int64) error {
	if err := h.writableErr("truncate", syscall.EINVAL); err != nil {
		return err
	}
	if size < 0 {
		return &os.PathError{Op: "truncate", Path: h.name, Err: syscall.EINVAL}
	}
	h.node.mu.Lock()
	defer h.node.mu.Unlock()
	h.node.truncateLocked(size)
	return nil
}

// Sync implements vfs.File: it writes every pending change of the file
// (from any handle) to the wrapped file, then syncs that.
func (h *file) Sync() error { return h.sync("sync", h.inner.Sync) }

// SyncData implements vfs.File as Sync does, with the wrapped SyncData.
func (h *file) SyncData() error { return h.sync("syncdata", h.inner.SyncData) }

func (h *file) sync(op string, syncInner func() error) error {
	if err := h.usable(op); err != nil {
		return err
	}
	n := h.node
	n.syncMu.Lock()
	defer n.syncMu.Unlock()
	undo, err := h.beginSync()
	if err != nil {
		return fmt.Errorf("lazyfs: %s %s: %w", op, h.name, err)
	}
	// The changes are in the wrapped file now; later writes may pile up
	// while it syncs, and wait for the next sync.
	err = syncInner()
	if undo != "" {
		if rerr := h.fs.inner.Remove(undo); err == nil {
			err = rerr
		}
	}
	return err
}

// beginSync writes the file's pending changes to the wrapped file, after
// saving their undo record (Options.UndoDir) if there are any; it returns
// the record's path, "" if none. Caller holds n.syncMu.
func (h *file) beginSync() (string, error) {
	n := h.node
	h.fs.mu.Lock() // FS.mu before n.mu
	name := n.name
	h.fs.mu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	var undo string
	// A removed file (no name) is one no one will look for after a kill.
	if h.fs.undoDir != "" && name != "" && len(n.pending) > 0 && len(n.writers) > 0 {
		rec, err := n.undoLocked(n.writers[0].inner, name)
		if err != nil {
			return "", err
		}
		if undo, err = h.fs.writeUndo(rec); err != nil {
			return "", err
		}
	}
	if err := n.flushLocked(); err != nil {
		if undo != "" {
			// The process goes on: a record left behind would undo later
			// syncs at the next start.
			_ = h.fs.inner.Remove(undo)
		}
		return "", err
	}
	return undo, nil
}

// Stat implements vfs.File; the size counts pending changes.
func (h *file) Stat() (os.FileInfo, error) {
	if err := h.usable("stat"); err != nil {
		return nil, err
	}
	info, err := h.inner.Stat()
	if err != nil {
		return nil, err
	}
	h.node.mu.RLock()
	defer h.node.mu.RUnlock()
	return sizedInfo{info, h.node.size}, nil
}

// Close implements vfs.File. The last writable handle of a file writes
// its pending changes to the wrapped file first, without syncing them.
func (h *file) Close() error {
	if err := h.fs.usable(); err != nil {
		return err
	}
	if h.closed.Swap(true) {
		return &os.PathError{Op: "close", Path: h.name, Err: os.ErrClosed}
	}
	return h.fs.closeFile(h)
}
