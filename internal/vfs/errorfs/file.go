package errorfs

import (
	"os"

	"keeper/internal/vfs"
)

// errFile is a file opened through FS.
type errFile struct {
	fs    *FS
	inner vfs.File
	name  string
}

func (f *errFile) Read(p []byte) (int, error) {
	if err := f.fs.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.inner.Read(p)
}

func (f *errFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.inner.ReadAt(p, off)
}

func (f *errFile) Write(p []byte) (int, error) {
	if err := f.fs.check(OpWrite, f.name); err != nil {
		return 0, err
	}
	n, spaceErr := f.fs.reserve(len(p), f.name)
	written, err := f.inner.Write(p[:n])
	if err != nil {
		return written, err
	}
	return written, spaceErr
}

func (f *errFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpWrite, f.name); err != nil {
		return 0, err
	}
	n, spaceErr := f.fs.reserve(len(p), f.name)
	written, err := f.inner.WriteAt(p[:n], off)
	if err != nil {
		return written, err
	}
	return written, spaceErr
}

func (f *errFile) Close() error {
	if err := f.fs.check(OpClose, f.name); err != nil {
		_ = f.inner.Close() // a failed close still releases the file
		return err
	}
	return f.inner.Close()
}

func (f *errFile) Sync() error {
	if err := f.fs.check(OpSync, f.name); err != nil {
		return err
	}
	return f.inner.Sync()
}

func (f *errFile) SyncData() error {
	if err := f.fs.check(OpSyncData, f.name); err != nil {
		return err
	}
	return f.inner.SyncData()
}

func (f *errFile) Truncate(size int64) error {
	if err := f.fs.check(OpTruncate, f.name); err != nil {
		return err
	}
	return f.inner.Truncate(size)
}

func (f *errFile) Stat() (os.FileInfo, error) {
	if err := f.fs.check(OpStat, f.name); err != nil {
		return nil, err
	}
	return f.inner.Stat()
}
