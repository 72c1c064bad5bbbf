package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrLocked matches (with errors.Is) FS.Lock's error when another holder
// has the lock, and so every *InUseError.
var ErrLocked = errors.New("locked by another holder")

// LockFileName is the lock file LockDirs keeps in every directory it
// locks. The lock is FS.Lock's on this file (flock(2) on the OS), not the
// file's existence: the file stays after its holder ends, and one left by
// a killed process blocks nobody. Its text names the process that last
// took the lock, for the error a second process gets and for operators:
//
//	version=1
//	pid=1234
//	command=keeper server /etc/keeper/zoo.cfg
//
// Readers take the pid line and ignore lines they do not know.
const LockFileName = "keeper.lock"

// lockFileVersion is the version line of the lock file LockDirs writes.
const lockFileVersion = 1

// maxLockFileBytes bounds what LockDirs reads of a holder's lock file, and
// so the command line it writes: the command is informative only, and a
// reader must not load an arbitrary file into memory.
const maxLockFileBytes = 4096

// InUseError is LockDirs' error for a directory whose lock another holder
// has: another keeper process (or another server or bookie in this one).
// It matches ErrLocked.
type InUseError struct {
	// Dir is the directory, as the caller named it.
	Dir string
	// PID is the holder's process id as its lock file records it; 0 when
	// the file records none (the holder had not written it yet).
	PID int
}

func (e *InUseError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("data directory %s is in use by another keeper process; stop it first", e.Dir)
	}
	return fmt.Sprintf("data directory %s is in use by another keeper process (pid %d); stop it first", e.Dir, e.PID)
}

// Unwrap returns ErrLocked.
func (e *InUseError) Unwrap() error { return ErrLocked }

// DirLock is the exclusive lock of a set of directories, taken by
// LockDirs. It is not safe for concurrent use.
type DirLock struct {
	held []io.Closer
}

// LockDirs takes the exclusive lock of every directory in dirs, to be held
// until DirLock.Close or the end of the process; a data directory's owner
// takes it before it reads or writes anything there. For each directory it
// creates the directory if it is missing (durably, as MkdirAllSync),
// locks its LockFileName with fsys.Lock, and records this process's pid
// and command line in the file. A directory named twice (the same after
// filepath.Clean) is locked once.
//
// If another holder has a directory's lock, LockDirs releases the locks it
// took and returns an *InUseError naming that directory and the holder's
// pid.
func LockDirs(fsys FS, dirs ...string) (*DirLock, error) {
	l := &DirLock{}
	seen := make(map[string]bool, len(dirs))
	for _, dir := range dirs {
		if seen[filepath.Clean(dir)] {
			continue
		}
		seen[filepath.Clean(dir)] = true
		c, err := lockDir(fsys, dir)
		if err != nil {
			_ = l.Close() // the lock error is the one to report
			return nil, err
		}
		l.held = append(l.held, c)
	}
	return l, nil
}

// Close releases the locks. Closing a nil or closed DirLock does nothing.
func (l *DirLock) Close() error {
	if l == nil {
		return nil
	}
	var errs []error
	for _, c := range l.held {
		errs = append(errs, c.Close())
	}
	l.held = nil
	return errors.Join(errs...)
}

func lockDir(fsys FS, dir string) (io.Closer, error) {
	if err := MkdirAllSync(fsys, dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockFileName)
	c, err := fsys.Lock(path)
	if errors.Is(err, ErrLocked) {
		return nil, &InUseError{Dir: dir, PID: holderPID(fsys, path)}
	}
	if err != nil {
		return nil, fmt.Errorf("lock data directory %s: %w", dir, err)
	}
	if err := writeHolder(fsys, path); err != nil {
		_ = c.Close() // the write error is the one to report
		return nil, fmt.Errorf("lock data directory %s: record the holder in %s: %w", dir, path, err)
	}
	return c, nil
}

// writeHolder records this process in the lock file path, whose lock the
// caller holds. It does not sync: the record is informative, and a crash
// that loses it only loses a pid that is dead anyway.
func writeHolder(fsys FS, path string) error {
	f, err := fsys.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(holderRecord(os.Getpid(), os.Args)); err != nil {
		_ = f.Close() // the write error is the one to report
		return err
	}
	return f.Close()
}

// holderRecord is the lock file's text for process pid run as args.
func holderRecord(pid int, args []string) []byte {
	head := fmt.Sprintf("version=%d\npid=%d\ncommand=", lockFileVersion, pid)
	command := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, strings.Join(args, " "))
	if room := maxLockFileBytes - len(head) - 1; len(command) > room {
		command = strings.ToValidUTF8(command[:room], "") // not a rune cut in half
	}
	return []byte(head + command + "\n")
}

// holderPID returns the pid the lock file path records, or 0 if it
// cannot be read or records none.
func holderPID(fsys FS, path string) int {
	f, err := fsys.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	buf := make([]byte, maxLockFileBytes)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0
	}
	return parseHolderPID(buf[:n])
}

// parseHolderPID returns the pid line's value in a lock file's text, or 0.
func parseHolderPID(text []byte) int {
	for line := range bytes.Lines(text) {
		v, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("pid="))
		if !ok {
			continue
		}
		if pid, err := strconv.Atoi(string(v)); err == nil && pid > 0 {
			return pid
		}
		return 0
	}
	return 0
}
