package vfs

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"keeper/internal/invariants"
)

// MemFS is an in-memory FS that remembers what is durable, so that a test
// can simulate a crash with CrashClone.
//
// Its durability model is strict, as the one pebble's MemFS uses:
//
//   - File contents become durable only through File.Sync or File.SyncData.
//     SyncData persists the size as well as the data, as fdatasync does on
//     Linux (the size is metadata needed to read the data back).
//   - A directory entry (a create, a MkdirAll, a rename or a remove) becomes
//     durable only through SyncDir on its directory. Directory changes are
//     ordered, as a journaling filesystem orders them: SyncDir(d) makes
//     durable every change up to the last one that touched d, in any
//     directory. A rename is one change, so a crash never loses both names.
//   - A file that is durable in no directory is gone after a crash, however
//     well its data was synced.
//
// MemFS is safe for concurrent use. Its files are safe for concurrent use
// too (one lock guards the whole filesystem), but sharing one file's read
// position between goroutines is rarely what a caller wants.
type MemFS struct {
	mu   sync.Mutex
	root *memNode
	// dirs holds every directory ever created, removed ones included, so
	// that CrashClone can find the durable entries of each.
	dirs []*memNode
	// meta holds the directory changes that are not durable yet, oldest
	// first. Applying all of them to the durable entries gives the current
	// entries.
	meta []metaOp
	// locked holds the files Lock holds (nil until the first Lock).
	locked map[*memNode]bool
}

// memNode is a file or a directory (an inode: renames move it, open files
// keep it alive after a remove).
type memNode struct {
	dir bool

	// Directory state.
	children map[string]*memNode // current entries
	durable  map[string]*memNode // the entries a crash keeps (before meta)

	// File state: synced + pending == data, always.
	data    []byte
	synced  []byte   // what a crash keeps
	pending []dataOp // changes since the last sync, oldest first
}

// dataOp is one change of a file's contents: a write or a truncate.
type dataOp struct {
	truncate bool
	off      int64  // write offset, or truncate size
	b        []byte // written bytes (a private copy)
}

// apply returns data with the change made; it may reuse data's array.
func (op dataOp) apply(data []byte) []byte {
	if op.truncate {
		return resize(data, op.off)
	}
	if len(op.b) == 0 {
		return data
	}
	end := op.off + int64(len(op.b))
	if end > int64(len(data)) {
		data = resize(data, end)
	}
	copy(data[op.off:], op.b)
	return data
}

// resize returns data cut or zero-extended to size bytes.
func resize(data []byte, size int64) []byte {
	if size <= int64(len(data)) {
		return data[:size]
	}
	return append(data, make([]byte, size-int64(len(data)))...)
}

type metaKind uint8

const (
	metaAdd metaKind = iota
	metaRemove
	metaRename
)

// metaOp is one directory change.
type metaOp struct {
	kind   metaKind
	dir    *memNode // add or remove: the directory; rename: the source directory
	name   string
	node   *memNode // add, rename: the node that gets the new name
	toDir  *memNode // rename only
	toName string   // rename only
}

// touches reports whether op changes directory d.
func (op *metaOp) touches(d *memNode) bool { return op.dir == d || op.toDir == d }

// apply makes the change in entries, a map from directory to its entries.
func (op *metaOp) apply(entries func(*memNode) map[string]*memNode) {
	switch op.kind {
	case metaAdd:
		entries(op.dir)[op.name] = op.node
	case metaRemove:
		delete(entries(op.dir), op.name)
	case metaRename:
		delete(entries(op.dir), op.name)
		entries(op.toDir)[op.toName] = op.node
	}
}

// NewMem returns an empty in-memory filesystem: just the root directory,
// which is always durable.
func NewMem() *MemFS {
	m := &MemFS{}
	m.root = m.newDirLocked()
	return m
}

func (m *MemFS) newDirLocked() *memNode {
	d := &memNode{dir: true, children: map[string]*memNode{}, durable: map[string]*memNode{}}
	m.dirs = append(m.dirs, d)
	return d
}

// clean turns name into an absolute slash-separated path; relative names
// are taken relative to the root.
func clean(name string) string {
	return path.Clean("/" + filepath.ToSlash(name))
}

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// lookupLocked returns the node at p (a clean path).
func (m *MemFS) lookupLocked(p string) (*memNode, error) {
	n := m.root
	if p == "/" {
		return n, nil
	}
	for _, part := range strings.Split(p[1:], "/") {
		if !n.dir {
			return nil, syscall.ENOTDIR
		}
		child, ok := n.children[part]
		if !ok {
			return nil, fs.ErrNotExist
		}
		n = child
	}
	return n, nil
}

// parentLocked returns the directory that holds p and p's last element.
func (m *MemFS) parentLocked(p string) (*memNode, string, error) {
	if p == "/" {
		return nil, "", fs.ErrInvalid
	}
	dir, base := path.Split(p)
	d, err := m.lookupLocked(clean(dir))
	if err != nil {
		return nil, "", err
	}
	if !d.dir {
		return nil, "", syscall.ENOTDIR
	}
	return d, base, nil
}

// Create implements FS. Creating an existing file truncates it in place
// (the same inode, as O_TRUNC does); the truncation is durable only once
// the file is synced.
func (m *MemFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(name)
	d, base, err := m.parentLocked(p)
	if err != nil {
		return nil, pathErr("create", name, err)
	}
	n, ok := d.children[base]
	switch {
	case ok && n.dir:
		return nil, pathErr("create", name, syscall.EISDIR)
	case ok:
		n.changeLocked(dataOp{truncate: true, off: 0})
	default:
		n = &memNode{}
		d.children[base] = n
		m.meta = append(m.meta, metaOp{kind: metaAdd, dir: d, name: base, node: n})
	}
	return &memFile{fs: m, n: n, name: name, writable: true}, nil
}

// Open implements FS.
func (m *MemFS) Open(name string) (File, error) { return m.open("open", name, false) }

// OpenReadWrite implements FS.
func (m *MemFS) OpenReadWrite(name string) (File, error) { return m.open("open", name, true) }

func (m *MemFS) open(op, name string, writable bool) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(clean(name))
	if err != nil {
		return nil, pathErr(op, name, err)
	}
	if n.dir {
		return nil, pathErr(op, name, syscall.EISDIR)
	}
	return &memFile{fs: m, n: n, name: name, writable: writable}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(name)
	d, base, err := m.parentLocked(p)
	if err != nil {
		return pathErr("remove", name, err)
	}
	n, ok := d.children[base]
	if !ok {
		return pathErr("remove", name, fs.ErrNotExist)
	}
	if n.dir && len(n.children) > 0 {
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	delete(d.children, base)
	m.meta = append(m.meta, metaOp{kind: metaRemove, dir: d, name: base})
	return nil
}

// Rename implements FS. A directory may be renamed too, but not into itself
// and not over an existing entry.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	op, np := clean(oldname), clean(newname)
	od, obase, err := m.parentLocked(op)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	n, ok := od.children[obase]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	nd, nbase, err := m.parentLocked(np)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	if op == np {
		return nil
	}
	if old, exists := nd.children[nbase]; exists && (old.dir || n.dir) {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrExist}
	}
	if n.dir && strings.HasPrefix(np, op+"/") {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrInvalid}
	}
	delete(od.children, obase)
	nd.children[nbase] = n
	m.meta = append(m.meta, metaOp{kind: metaRename, dir: od, name: obase, node: n, toDir: nd, toName: nbase})
	return nil
}

// MkdirAll implements FS. Each directory it creates is an entry in its
// parent, durable only after SyncDir on the parent.
func (m *MemFS) MkdirAll(dir string, _ os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(dir)
	if p == "/" {
		return nil
	}
	n := m.root
	for _, part := range strings.Split(p[1:], "/") {
		child, ok := n.children[part]
		if !ok {
			child = m.newDirLocked()
			n.children[part] = child
			m.meta = append(m.meta, metaOp{kind: metaAdd, dir: n, name: part, node: child})
		} else if !child.dir {
			return pathErr("mkdir", dir, syscall.ENOTDIR)
		}
		n = child
	}
	return nil
}

// List implements FS.
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.lookupLocked(clean(dir))
	if err != nil {
		return nil, pathErr("readdir", dir, err)
	}
	if !n.dir {
		return nil, pathErr("readdir", dir, syscall.ENOTDIR)
	}
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// Stat implements FS.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := clean(name)
	n, err := m.lookupLocked(p)
	if err != nil {
		return nil, pathErr("stat", name, err)
	}
	return n.infoLocked(path.Base(p)), nil
}

// SyncDir implements FS: it makes durable every directory change up to the
// last one that touched dir.
func (m *MemFS) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, err := m.lookupLocked(clean(dir))
	if err != nil {
		return pathErr("sync", dir, err)
	}
	if !d.dir {
		return pathErr("sync", dir, syscall.ENOTDIR)
	}
	last := -1
	for i := range m.meta {
		if m.meta[i].touches(d) {
			last = i
		}
	}
	durable := func(n *memNode) map[string]*memNode { return n.durable }
	for i := 0; i <= last; i++ {
		m.meta[i].apply(durable)
	}
	m.meta = slices.Delete(m.meta, 0, last+1)
	return nil
}

// changeLocked makes a change to a file's contents, not yet durable.
func (n *memNode) changeLocked(op dataOp) {
	if !op.truncate {
		op.b = bytes.Clone(op.b)
	}
	n.data = op.apply(n.data)
	n.pending = append(n.pending, op)
}

// syncLocked makes a file's contents durable.
func (n *memNode) syncLocked() {
	for _, op := range n.pending {
		n.synced = op.apply(n.synced)
	}
	n.pending = nil
	if invariants.Enabled {
		invariants.Assertf(bytes.Equal(n.synced, n.data),
			"vfs: synced contents (%d bytes) differ from the data (%d bytes)", len(n.synced), len(n.data))
	}
}
