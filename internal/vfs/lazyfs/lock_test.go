package lazyfs

import (
	"errors"
	"path/filepath"
	"testing"

	"keeper/internal/vfs"
)

// TestLock: a lock taken through the wrapper is the wrapped FS's (another
// process, which opens the wrapped FS, is kept out), Close releases it,
// and Crash releases it as the kernel releases a killed process's.
func TestLock(t *testing.T) {
	tests := []struct {
		name    string
		release func(f *FS, l interface{ Close() error }) error
	}{
		{"close", func(_ *FS, l interface{ Close() error }) error { return l.Close() }},
		{"crash", func(f *FS, l interface{ Close() error }) error {
			f.Crash()
			if err := l.Close(); !errors.Is(err, ErrCrashed) {
				t.Errorf("Close after Crash: %v, want ErrCrashed", err)
			}
			return nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), vfs.LockFileName)
			f := Wrap(vfs.Default)
			l, err := f.Lock(name)
			mustOK(t, err)
			if _, err := vfs.Default.Lock(name); !errors.Is(err, vfs.ErrLocked) {
				t.Fatalf("lock through the wrapped FS while held: %v, want ErrLocked", err)
			}
			if _, err := f.Lock(name); !errors.Is(err, vfs.ErrLocked) {
				t.Fatalf("second lock through the wrapper: %v, want ErrLocked", err)
			}
			mustOK(t, tc.release(f, l))
			again, err := vfs.Default.Lock(name)
			if err != nil {
				t.Fatalf("lock after the release: %v", err)
			}
			mustOK(t, again.Close())
		})
	}
}
