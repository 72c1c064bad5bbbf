//go:build !linux

package entrystore

// mapArena is implemented for Linux only; elsewhere the write cache's
// segments come from the heap.
func mapArena(n int) (b []byte, unmap func() error, ok bool) { return nil, nil, false }
