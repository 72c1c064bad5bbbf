package durablelog

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"keeper/internal/vfs"
)

// Appender appends to one new log file: it buffers what it is given,
// writes it out at the end of the file, grows the file ahead of the writes
// when its owner asks, and syncs. It is not safe for concurrent use.
//
// After any failed write, preallocation, sync or directory sync the
// Appender is poisoned: the state of the file after a failed fsync is
// unknown, so it never retries, and every later call returns the first
// error. Its owner must stop and recover by reopening, which rereads what
// is really on disk.
type Appender struct {
	fsys   vfs.FS
	f      vfs.File
	path   string
	dir    string
	prefix string

	buf          []byte // bytes given and not yet written
	writeOff     int64  // where the next bytes go, buffered ones included
	flushedOff   int64  // bytes handed to the file
	syncedOff    int64  // bytes made durable
	size         int64  // the size the file was grown to ahead of the writes
	syncedSize   int64  // the file's size at the last sync
	entryDurable bool   // its directory entry has been synced
	zeros        []byte // for preallocation
	err          error  // sticky
}

// Create creates the file name in dir, which must not exist: a log never
// appends to a file it did not create, and a file already there can only
// come from something else going wrong (another process on the
// directory). prefix starts its error messages ("txnlog", "journal").
func Create(fsys vfs.FS, dir, name, prefix string) (*Appender, error) {
	path := filepath.Join(dir, name)
	if _, err := fsys.Stat(path); err == nil {
		return nil, fmt.Errorf("%s: create %s: %w", prefix, path, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: stat %s: %w", prefix, path, err)
	}
	f, err := fsys.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: create %s: %w", prefix, path, err)
	}
	return &Appender{fsys: fsys, f: f, path: path, dir: dir, prefix: prefix}, nil
}

// Path returns the file's path.
func (a *Appender) Path() string { return a.path }

// Err returns the error that poisoned the Appender, or nil.
func (a *Appender) Err() error { return a.err }

// Offset returns the file's length once everything given is written:
// where the next bytes go.
func (a *Appender) Offset() int64 { return a.writeOff }

// Flushed returns how many bytes have been written to the file.
func (a *Appender) Flushed() int64 { return a.flushedOff }

// Buffered returns how many bytes are given and not yet written.
func (a *Appender) Buffered() int { return len(a.buf) }

// Size returns the size the file was last grown to by Preallocate (0 if
// never).
func (a *Appender) Size() int64 { return a.size }

// Dirty reports whether bytes were given since the last Sync.
func (a *Appender) Dirty() bool { return a.writeOff > a.syncedOff }

func (a *Appender) poison(err error) error {
	if a.err == nil {
		a.err = err
	}
	return a.err
}

// Append buffers parts, in order, after everything given before. Nothing
// is written until Flush or Sync. It does nothing on a poisoned Appender,
// whose next Flush or Sync returns the poison.
func (a *Appender) Append(parts ...[]byte) {
	if a.err != nil {
		return
	}
	for _, p := range parts {
		a.buf = append(a.buf, p...)
		a.writeOff += int64(len(p))
	}
}

// Preallocate grows the file to size bytes ahead of the writes, if it is
// not that large yet, by writing fill zero bytes that end at size (1 for
// ZooKeeper's FilePadding, an alignment unit for BookKeeper's journal),
// which leaves the filesystem to supply the zeros in between. The zeros
// must land beyond every byte written so far (bytes given and not yet
// written may overlap them: they are written after); the format's rule
// decides when and by how much a file grows.
func (a *Appender) Preallocate(size int64, fill int) error {
	if a.err != nil {
		return a.err
	}
	if size <= a.size {
		return nil
	}
	if fill < 1 || int64(fill) > size || size-int64(fill) < a.flushedOff {
		return fmt.Errorf("%s: preallocate %s to %d bytes with %d zeros: %d bytes are written", a.prefix, a.path, size, fill, a.flushedOff)
	}
	if len(a.zeros) < fill {
		a.zeros = make([]byte, fill)
	}
	if _, err := a.f.WriteAt(a.zeros[:fill], size-int64(fill)); err != nil {
		return a.poison(fmt.Errorf("%s: preallocate %s to %d bytes: %w", a.prefix, a.path, size, err))
	}
	a.size = size
	return nil
}

// Flush writes the buffered bytes to the file, without syncing.
func (a *Appender) Flush() error {
	if a.err != nil {
		return a.err
	}
	if len(a.buf) == 0 {
		return nil
	}
	if _, err := a.f.WriteAt(a.buf, a.flushedOff); err != nil {
		return a.poison(fmt.Errorf("%s: write %s at offset %d: %w", a.prefix, a.path, a.flushedOff, err))
	}
	a.flushedOff += int64(len(a.buf))
	a.buf = a.buf[:0]
	return nil
}

// Sync writes the buffered bytes and makes everything given so far
// durable: fdatasync, or fsync when the file's size changed since the last
// sync (which preallocation makes rare), and then, the first time, fsync
// of the directory, so that the file itself survives a crash. What was
// given before a Sync that returns nil is durable.
func (a *Appender) Sync() error {
	if a.err != nil {
		return a.err
	}
	if !a.Dirty() {
		return nil
	}
	if err := a.Flush(); err != nil {
		return err
	}
	size := max(a.size, a.flushedOff)
	var err error
	if size != a.syncedSize {
		err = a.f.Sync()
	} else {
		err = a.f.SyncData()
	}
	if err != nil {
		return a.poison(fmt.Errorf("%s: sync %s: %w", a.prefix, a.path, err))
	}
	a.syncedSize = size
	if !a.entryDurable {
		if err := a.fsys.SyncDir(a.dir); err != nil {
			return a.poison(fmt.Errorf("%s: sync %s: %w", a.prefix, a.dir, err))
		}
		a.entryDurable = true
	}
	a.syncedOff = a.flushedOff
	return nil
}

// Close closes the file without writing or syncing anything: Sync first
// to keep what was given.
func (a *Appender) Close() error {
	if err := a.f.Close(); err != nil {
		return fmt.Errorf("%s: close %s: %w", a.prefix, a.path, err)
	}
	return nil
}
