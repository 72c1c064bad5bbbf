package entrystore

import "syscall"

// mapArena returns n bytes of zeroed anonymous memory outside the Go heap,
// advised to be backed by transparent huge pages: the write cache's
// segments are filled at the bookie's add rate, and a huge page costs one
// fault where 4 KiB pages cost 512, and memory the garbage collector does
// not own does not raise its heap goal (which would make every other
// allocation walk through more cold memory). unmap returns it; nothing
// may touch the memory afterwards. ok is false if the memory could not be
// mapped: the caller then allocates from the heap.
func mapArena(n int) (b []byte, unmap func() error, ok bool) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, nil, false
	}
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) // advice: without it the kernel uses small pages
	return b, func() error { return syscall.Munmap(b) }, true
}
