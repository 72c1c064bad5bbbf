package sim

import (
	"fmt"
	"io"
	"os"

	"keeper/internal/vfs"
)

// crashFS is a server's filesystem as its process sees it: a vfs.MemFS
// whose process can be made to die at the n-th operation that changes
// something (a write, a truncate, a sync, a create, a rename, a remove):
// that operation and every later one fail with errCrash, and the
// simulator crashes the server when the storage call returns. The files
// keep what was done before it, synced or not, and the crash then drops
// what MemFS.CrashClone drops. This reaches the points between the steps
// of one storage call — an epoch file's temp file written but not renamed,
// a snapshot half written, a log cut but its snapshots not yet removed —
// that the failpoints at the peer.Log calls cannot.
type crashFS struct {
	mem *vfs.MemFS
	// opsLeft counts down the changing operations still allowed; 0 means
	// no crash is armed.
	opsLeft int
	dead    bool // the armed crash happened: every operation fails
}

// arm makes the n-th changing operation from now crash the process.
func (f *crashFS) arm(n int) { f.opsLeft, f.dead = n, false }

// disarm cancels an armed crash (a new process starts).
func (f *crashFS) disarm() { f.opsLeft, f.dead = 0, false }

// change is called before every changing operation.
func (f *crashFS) change(op, name string) error {
	switch {
	case f.dead:
	case f.opsLeft == 0:
		return nil
	case f.opsLeft > 1:
		f.opsLeft--
		return nil
	default:
		f.opsLeft, f.dead = 0, true
	}
	return fmt.Errorf("%s %s: %w", op, name, errCrash)
}

func (f *crashFS) read(op, name string) error {
	if f.dead {
		return fmt.Errorf("%s %s: %w", op, name, errCrash)
	}
	return nil
}

func (f *crashFS) Create(name string) (vfs.File, error) {
	if err := f.change("create", name); err != nil {
		return nil, err
	}
	fl, err := f.mem.Create(name)
	return f.wrap(fl, name, err)
}

func (f *crashFS) Open(name string) (vfs.File, error) {
	if err := f.read("open", name); err != nil {
		return nil, err
	}
	fl, err := f.mem.Open(name)
	return f.wrap(fl, name, err)
}

func (f *crashFS) OpenReadWrite(name string) (vfs.File, error) {
	if err := f.read("open", name); err != nil {
		return nil, err
	}
	fl, err := f.mem.OpenReadWrite(name)
	return f.wrap(fl, name, err)
}

func (f *crashFS) wrap(fl vfs.File, name string, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &crashFile{File: fl, fs: f, name: name}, nil
}

func (f *crashFS) Remove(name string) error {
	if err := f.change("remove", name); err != nil {
		return err
	}
	return f.mem.Remove(name)
}

func (f *crashFS) Rename(oldname, newname string) error {
	if err := f.change("rename", oldname); err != nil {
		return err
	}
	return f.mem.Rename(oldname, newname)
}

func (f *crashFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := f.change("mkdir", dir); err != nil {
		return err
	}
	return f.mem.MkdirAll(dir, perm)
}

func (f *crashFS) List(dir string) ([]string, error) {
	if err := f.read("list", dir); err != nil {
		return nil, err
	}
	return f.mem.List(dir)
}

func (f *crashFS) Stat(name string) (os.FileInfo, error) {
	if err := f.read("stat", name); err != nil {
		return nil, err
	}
	return f.mem.Stat(name)
}

func (f *crashFS) SyncDir(dir string) error {
	if err := f.change("syncdir", dir); err != nil {
		return err
	}
	return f.mem.SyncDir(dir)
}

func (f *crashFS) Lock(name string) (io.Closer, error) { return f.mem.Lock(name) }

// crashFile is a file of a crashFS.
type crashFile struct {
	vfs.File
	fs   *crashFS
	name string
}

func (c *crashFile) Read(p []byte) (int, error) {
	if err := c.fs.read("read", c.name); err != nil {
		return 0, err
	}
	return c.File.Read(p)
}

func (c *crashFile) ReadAt(p []byte, off int64) (int, error) {
	if err := c.fs.read("read", c.name); err != nil {
		return 0, err
	}
	return c.File.ReadAt(p, off)
}

func (c *crashFile) Write(p []byte) (int, error) {
	if err := c.fs.change("write", c.name); err != nil {
		return 0, err
	}
	return c.File.Write(p)
}

func (c *crashFile) WriteAt(p []byte, off int64) (int, error) {
	if err := c.fs.change("write", c.name); err != nil {
		return 0, err
	}
	return c.File.WriteAt(p, off)
}

func (c *crashFile) Truncate(size int64) error {
	if err := c.fs.change("truncate", c.name); err != nil {
		return err
	}
	return c.File.Truncate(size)
}

func (c *crashFile) Sync() error {
	if err := c.fs.change("sync", c.name); err != nil {
		return err
	}
	return c.File.Sync()
}

func (c *crashFile) SyncData() error {
	if err := c.fs.change("sync", c.name); err != nil {
		return err
	}
	return c.File.SyncData()
}
