package vfs

import (
	"io"
	"io/fs"
	"syscall"
)

// Lock implements FS. The lock belongs to the file, as flock's does: a
// rename keeps it, and a file removed and created again is another file,
// unlocked. Creating the lock file is a directory change like Create's,
// durable only after SyncDir. CrashClone's copy holds no locks: a crash
// ends the process that held them.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parentLocked(clean(name))
	if err != nil {
		return nil, pathErr("lock", name, err)
	}
	n, ok := d.children[base]
	switch {
	case ok && n.dir:
		return nil, pathErr("lock", name, syscall.EISDIR)
	case !ok:
		n = &memNode{}
		d.children[base] = n
		m.meta = append(m.meta, metaOp{kind: metaAdd, dir: d, name: base, node: n})
	}
	if m.locked[n] {
		return nil, pathErr("lock", name, ErrLocked)
	}
	if m.locked == nil {
		m.locked = make(map[*memNode]bool)
	}
	m.locked[n] = true
	return &memLock{fs: m, n: n, name: name}, nil
}

// memLock is a lock MemFS.Lock holds.
type memLock struct {
	fs       *MemFS
	n        *memNode
	name     string
	released bool // fs.mu guards it
}

// Close releases the lock; closing it again fails with fs.ErrClosed.
func (l *memLock) Close() error {
	l.fs.mu.Lock()
	defer l.fs.mu.Unlock()
	if l.released {
		return pathErr("close", l.name, fs.ErrClosed)
	}
	l.released = true
	delete(l.fs.locked, l.n)
	return nil
}
