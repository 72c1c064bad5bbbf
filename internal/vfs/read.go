package vfs

import (
	"errors"
	"io"
)

// ReadFile returns the contents of the named file.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, info.Size())
	n, err := f.ReadAt(data, 0)
	if err != nil && !errors.Is(err, io.EOF) { // EOF: the file shrank meanwhile
		return nil, err
	}
	return data[:n], nil
}
