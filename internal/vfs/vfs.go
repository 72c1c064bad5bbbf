// Package vfs is the filesystem seam of keeper's storage: every durable
// file (transaction log, snapshots, epoch files, bookie journal and entry
// logs) is opened through an FS, so that tests can substitute a memory
// filesystem that loses unsynced writes on a simulated crash, or one that
// injects errors (a full disk, a failing fsync). The lock that keeps a
// second process out of a data directory (FS.Lock, LockDirs) goes through
// it too.
package vfs

import (
	"io"
	"os"
)

// File is an open file. It is not safe for concurrent use unless stated.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Closer
	// Sync makes the file's data and metadata durable (fsync).
	Sync() error
	// SyncData makes the file's data durable (fdatasync): enough when the
	// file's size did not change, e.g. inside a preallocated region.
	SyncData() error
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Stat describes the file.
	Stat() (os.FileInfo, error)
}

// FS is a filesystem.
type FS interface {
	// Create creates or truncates the named file for reading and writing.
	Create(name string) (File, error)
	// Open opens the named file for reading.
	Open(name string) (File, error)
	// OpenReadWrite opens an existing file for reading and writing.
	OpenReadWrite(name string) (File, error)
	// Remove removes the named file or empty directory.
	Remove(name string) error
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and any missing parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names of the entries in dir, sorted.
	List(dir string) ([]string, error)
	// Stat describes the named file.
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the directory's entries durable (fsync on the
	// directory), so that files created or renamed in it survive a crash.
	SyncDir(dir string) error
	// Lock takes an exclusive lock on the named file, creating the file
	// if it does not exist (its parent must). It does not wait: while
	// another holder has the lock, in this process or another, it fails
	// with an error matching ErrLocked. Closing the returned Closer
	// releases the lock and leaves the file in place; a process that ends
	// releases its locks, however it ends. LockDirs builds on it.
	Lock(name string) (io.Closer, error)
}
