package snap

import (
	"math/rand/v2"

	"keeper/internal/vfs"
	"keeper/internal/vfs/errorfs"
)

// testFS is a memory filesystem that can crash (mem.CrashClone) and
// inject failures (the errorfs.FS it embeds), with the directory /d.
type testFS struct {
	*errorfs.FS
	mem *vfs.MemFS
}

func newMemFS() *testFS { return wrapMem(vfs.NewMem()) }

func wrapMem(mem *vfs.MemFS) *testFS {
	if err := vfs.MkdirAllSync(mem, "/d", 0o755); err != nil {
		panic(err)
	}
	return &testFS{FS: errorfs.Wrap(mem), mem: mem}
}

// put stores a file durably, bypassing failure injection.
func (f *testFS) put(name string, b []byte) {
	w, err := f.mem.Create(name)
	if err == nil {
		_, err = w.Write(b)
	}
	if err == nil {
		err = w.Sync()
	}
	if err == nil {
		err = w.Close()
	}
	if err == nil {
		err = f.mem.SyncDir("/d")
	}
	if err != nil {
		panic(err)
	}
}

// get returns a file's bytes, or nil if it cannot be read.
func (f *testFS) get(name string) []byte {
	b, err := vfs.ReadFile(f.mem, name)
	if err != nil {
		return nil
	}
	return b
}

// crash returns the filesystem a power loss would leave now: the worst
// case the durability model allows with rng nil, else a random one.
func (f *testFS) crash(rng *rand.Rand) *testFS {
	clone := f.mem.CrashClone(rng)
	return &testFS{FS: errorfs.Wrap(clone), mem: clone}
}
