// Package errorfs wraps a vfs.FS and makes chosen operations fail, so that
// tests can reproduce a full disk, a failing fsync or a failing rename
// exactly, and check what the code under test does next.
//
// Typical uses:
//
//	efs := errorfs.Wrap(vfs.NewMem())
//	efs.LimitSpace(1 << 20)                                  // ENOSPC after 1 MiB more
//	efs.Add(errorfs.Rule{Ops: errorfs.OpSyncData})           // every fdatasync fails with EIO
//	efs.Add(errorfs.Rule{Ops: errorfs.OpRename, After: 2, Times: 1}) // the third rename fails once
//
// An injected failure does not reach the wrapped FS (except a short write,
// see LimitSpace): a failed sync leaves the data unsynced, so a crash of a
// wrapped vfs.MemFS afterwards loses it.
package errorfs

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"strings"
	"sync"
	"syscall"

	"keeper/internal/vfs"
)

// Op is a set of filesystem operations, as a bit mask.
type Op uint32

// The operations a Rule can match.
const (
	OpCreate        Op = 1 << iota // FS.Create
	OpOpen                         // FS.Open
	OpOpenReadWrite                // FS.OpenReadWrite
	OpRemove                       // FS.Remove
	OpRename                       // FS.Rename
	OpMkdirAll                     // FS.MkdirAll
	OpList                         // FS.List
	OpStat                         // FS.Stat and File.Stat
	OpSyncDir                      // FS.SyncDir
	OpRead                         // File.Read and File.ReadAt
	OpWrite                        // File.Write and File.WriteAt
	OpSync                         // File.Sync
	OpSyncData                     // File.SyncData
	OpTruncate                     // File.Truncate
	OpClose                        // File.Close
	opEnd
)

// Groups of operations.
const (
	// OpAll is every operation.
	OpAll = opEnd - 1
	// OpAnySync is every kind of sync: what "fsync fails" means.
	OpAnySync = OpSync | OpSyncData | OpSyncDir
)

var opNames = []string{
	"create", "open", "openrw", "remove", "rename", "mkdirall", "list", "stat",
	"syncdir", "read", "write", "sync", "syncdata", "truncate", "close",
}

// String names the operations in o, joined by "|".
func (o Op) String() string {
	var names []string
	for i, name := range opNames {
		if o&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf("Op(%#x)", uint32(o))
	}
	return strings.Join(names, "|")
}

// ErrInjected matches (with errors.Is) every error this package injects.
var ErrInjected = errors.New("errorfs: injected")

// Error is an injected failure. errors.Is matches it against ErrInjected
// and against Err (for example syscall.ENOSPC).
type Error struct {
	Op   Op
	Path string
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("%v %s: %v (injected)", e.Op, e.Path, e.Err) }

// Unwrap returns the errno.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is ErrInjected.
func (e *Error) Is(target error) bool { return target == ErrInjected }

// Rule says which operations fail. The zero Rule but for Ops fails every
// matching operation with EIO.
type Rule struct {
	// Ops are the operations the rule applies to.
	Ops Op
	// PathContains limits the rule to paths that contain it; "" matches all.
	// A file's operations use the name it was opened with.
	PathContains string
	// After lets this many matching operations succeed before the first
	// failure: After: 2 fails the third.
	After int
	// Times is how many operations fail before the rule stops failing;
	// 0 means every one from then on (a broken disk).
	Times int
	// Err is the errno to return; nil means syscall.EIO.
	Err error
}

// rule is a Rule with its counters.
type rule struct {
	Rule
	seen, failed int
}

// FS wraps a vfs.FS and injects failures. It is safe for concurrent use.
type FS struct {
	inner vfs.FS

	mu        sync.Mutex
	rules     []*rule
	spaceLeft int64 // bytes that may still be written; < 0: no limit
	counts    []int // per operation, indexed by bit number
}

// Wrap returns inner with no failures injected yet.
func Wrap(inner vfs.FS) *FS {
	return &FS{inner: inner, spaceLeft: -1, counts: make([]int, len(opNames))}
}

// Add adds a rule. Rules are checked in the order they were added; the
// first one that fires decides the error.
func (f *FS) Add(r Rule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, &rule{Rule: r})
}

// LimitSpace makes writes fail with ENOSPC once n more bytes have been
// written. The write that crosses the limit writes what fits and returns a
// short count with the error, as a real full disk can. Negative n removes
// the limit.
func (f *FS) LimitSpace(n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spaceLeft = max(n, -1)
}

// Reset removes every rule and the space limit. Counts are kept.
func (f *FS) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
	f.spaceLeft = -1
}

// Count returns how many operations in ops were attempted, failed or not.
func (f *FS) Count(ops Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	total := 0
	for i, c := range f.counts {
		if ops&(1<<i) != 0 {
			total += c
		}
	}
	return total
}

// check counts one operation and returns the error to inject, if any.
func (f *FS) check(op Op, path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[bits.TrailingZeros32(uint32(op))]++
	var fired error
	for _, r := range f.rules {
		if r.Ops&op == 0 || !strings.Contains(path, r.PathContains) {
			continue
		}
		r.seen++
		if r.seen <= r.After || (r.Times > 0 && r.failed >= r.Times) || fired != nil {
			continue
		}
		r.failed++
		errno := r.Err
		if errno == nil {
			errno = syscall.EIO
		}
		fired = &Error{Op: op, Path: path, Err: errno}
	}
	return fired
}

// reserve takes up to n bytes of space; it returns how many it got and, if
// that is fewer, the ENOSPC error.
func (f *FS) reserve(n int, path string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.spaceLeft < 0 || int64(n) <= f.spaceLeft {
		if f.spaceLeft >= 0 {
			f.spaceLeft -= int64(n)
		}
		return n, nil
	}
	got := int(f.spaceLeft)
	f.spaceLeft = 0
	return got, &Error{Op: OpWrite, Path: path, Err: syscall.ENOSPC}
}

// Create implements vfs.FS.
func (f *FS) Create(name string) (vfs.File, error) {
	if err := f.check(OpCreate, name); err != nil {
		return nil, err
	}
	file, err := f.inner.Create(name)
	if err != nil {
		return nil, err
	}
	return &errFile{fs: f, inner: file, name: name}, nil
}

// Open implements vfs.FS.
func (f *FS) Open(name string) (vfs.File, error) {
	if err := f.check(OpOpen, name); err != nil {
		return nil, err
	}
	file, err := f.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return &errFile{fs: f, inner: file, name: name}, nil
}

// OpenReadWrite implements vfs.FS.
func (f *FS) OpenReadWrite(name string) (vfs.File, error) {
	if err := f.check(OpOpenReadWrite, name); err != nil {
		return nil, err
	}
	file, err := f.inner.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	return &errFile{fs: f, inner: file, name: name}, nil
}

// Remove implements vfs.FS.
func (f *FS) Remove(name string) error {
	if err := f.check(OpRemove, name); err != nil {
		return err
	}
	return f.inner.Remove(name)
}

// Rename implements vfs.FS. A rule's PathContains matches either name.
func (f *FS) Rename(oldname, newname string) error {
	if err := f.check(OpRename, oldname+"\x00"+newname); err != nil {
		return err
	}
	return f.inner.Rename(oldname, newname)
}

// MkdirAll implements vfs.FS.
func (f *FS) MkdirAll(dir string, perm os.FileMode) error {
	if err := f.check(OpMkdirAll, dir); err != nil {
		return err
	}
	return f.inner.MkdirAll(dir, perm)
}

// List implements vfs.FS.
func (f *FS) List(dir string) ([]string, error) {
	if err := f.check(OpList, dir); err != nil {
		return nil, err
	}
	return f.inner.List(dir)
}

// Stat implements vfs.FS.
func (f *FS) Stat(name string) (os.FileInfo, error) {
	if err := f.check(OpStat, name); err != nil {
		return nil, err
	}
	return f.inner.Stat(name)
}

// SyncDir implements vfs.FS.
func (f *FS) SyncDir(dir string) error {
	if err := f.check(OpSyncDir, dir); err != nil {
		return err
	}
	return f.inner.SyncDir(dir)
}

// Lock implements vfs.FS. It passes through: no Op names it, so no rule
// fails it (vfs.LockDirs's record of the holder goes through Create and
// Write, which rules do match).
func (f *FS) Lock(name string) (io.Closer, error) { return f.inner.Lock(name) }
