package lazyfs

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sync"

	"keeper/internal/vfs"
)

// change is one pending write (data at off) or truncate (to off).
type change struct {
	off   int64
	data  []byte // owned by the change
	trunc bool
}

func (c change) end() int64 { return c.off + int64(len(c.data)) }

// node is the shared state of one file (an inode): what the wrapped file
// holds, and the changes made since its last sync.
type node struct {
	// syncMu serialises the file's syncs, so that at most one undo
	// record of the file exists at a time. Lock order: syncMu, then mu.
	syncMu sync.Mutex
	mu     sync.RWMutex
	// name is the node's key in FS.nodes; "" once it is removed or
	// replaced (open handles keep it alive). FS.mu guards it, not mu.
	name string
	// innerSize is the wrapped file's size, as written so far.
	innerSize int64
	// size is the file's size as readers see it: innerSize with every
	// pending change applied.
	size int64
	// pending holds the changes not yet written to the wrapped file,
	// oldest first; pendingBytes is the sum of their data.
	pending      []change
	pendingBytes int64
	// files are the open handles; writers those of them open for writing.
	files, writers []*file
	// writebackErr is the first error of a writeback since the last sync;
	// the next Sync reports it, as Linux reports a failed writeback at the
	// next fsync.
	writebackErr error
}

// readAtLocked fills p from off with the file's contents as readers see
// them: the wrapped file read through inner, the pending changes applied
// over it in order. Caller holds n.mu (read or write).
func (n *node) readAtLocked(inner vfs.File, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("lazyfs: read at negative offset %d", off)
	}
	if off >= n.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	buf := p[:min(int64(len(p)), n.size-off)]
	clear(buf)
	if base := min(int64(len(buf)), n.innerSize-off); base > 0 {
		got, err := inner.ReadAt(buf[:base], off)
		if int64(got) < base {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF // the wrapped file shrank behind our back
			}
			return 0, fmt.Errorf("lazyfs: read at offset %d: %w", off, err)
		}
	}
	end := off + int64(len(buf))
	for _, c := range n.pending {
		if c.trunc {
			if c.off < end {
				clear(buf[max(c.off-off, 0):])
			}
			continue
		}
		lo, hi := max(c.off, off), min(c.end(), end)
		if lo < hi {
			copy(buf[lo-off:hi-off], c.data[lo-c.off:hi-c.off])
		}
	}
	if len(buf) < len(p) {
		return len(buf), io.EOF
	}
	return len(buf), nil
}

// writeLocked records a write of p at off. A write that continues the
// newest pending write extends it, so that appends cost one change.
func (n *node) writeLocked(p []byte, off int64) {
	if len(p) == 0 {
		return
	}
	if k := len(n.pending) - 1; k >= 0 && !n.pending[k].trunc && n.pending[k].end() == off {
		n.pending[k].data = append(n.pending[k].data, p...)
	} else {
		n.pending = append(n.pending, change{off: off, data: bytes.Clone(p)})
	}
	n.pendingBytes += int64(len(p))
	n.size = max(n.size, off+int64(len(p)))
}

// truncateLocked records a truncate to size.
func (n *node) truncateLocked(size int64) {
	n.pending = append(n.pending, change{off: size, trunc: true})
	n.size = size
}

// writeBackLocked writes the first k pending changes to the wrapped file
// through w, and then the first torn bytes of change k (a write), without
// syncing. What was written leaves the pending list; on an error, the
// change that failed and every later one stay pending (writing them again
// is harmless: each lands where it landed before).
func (n *node) writeBackLocked(w vfs.File, k int, torn int) error {
	done := 0
	var err error
	for ; done < k; done++ {
		c := n.pending[done]
		if c.trunc {
			err = w.Truncate(c.off)
		} else {
			_, err = w.WriteAt(c.data, c.off)
		}
		if err != nil {
			break
		}
		if c.trunc {
			n.innerSize = c.off
		} else {
			n.innerSize = max(n.innerSize, c.end())
		}
	}
	if err == nil && done < len(n.pending) && torn > 0 {
		c := &n.pending[done]
		if _, err = w.WriteAt(c.data[:torn], c.off); err == nil {
			n.innerSize = max(n.innerSize, c.off+int64(torn))
			c.off += int64(torn)
			c.data = c.data[torn:]
			n.pendingBytes -= int64(torn)
		}
	}
	for _, c := range n.pending[:done] {
		n.pendingBytes -= int64(len(c.data))
	}
	n.pending = slices.Clone(n.pending[done:]) // let the written changes' buffers go
	if len(n.pending) == 0 {
		n.pending = nil
	}
	if err != nil {
		return fmt.Errorf("lazyfs: write back: %w", err)
	}
	return nil
}

// flushLocked writes every pending change to the wrapped file (no sync)
// and returns the first writeback error since the last flush, if any.
func (n *node) flushLocked() error {
	err := n.writebackErr
	n.writebackErr = nil
	if len(n.pending) == 0 {
		return err
	}
	if len(n.writers) == 0 {
		return fmt.Errorf("lazyfs: %d pending changes and no writable handle", len(n.pending))
	}
	if werr := n.writeBackLocked(n.writers[0].inner, len(n.pending), 0); err == nil {
		err = werr
	}
	return err
}

// resetLocked empties the file, as Create's O_TRUNC does at once.
func (n *node) resetLocked() {
	n.pending, n.pendingBytes, n.writebackErr = nil, 0, nil
	n.innerSize, n.size = 0, 0
}

// dropLocked forgets f, an open handle of n.
func (n *node) dropLocked(f *file) {
	if i := slices.Index(n.files, f); i >= 0 {
		n.files = slices.Delete(n.files, i, i+1)
	}
	if i := slices.Index(n.writers, f); i >= 0 {
		n.writers = slices.Delete(n.writers, i, i+1)
	}
}
