package main

import (
	"bytes"
	"io"
	"regexp"
	"testing"
	"time"

	"keeper/internal/vfs"
)

// TestProgressFS reads a file through progressFS with an interval of zero,
// so that every read reports: each line says how much of what was opened
// has been read.
func TestProgressFS(t *testing.T) {
	mem := vfs.NewMem()
	f, err := mem.Create("/snapshot.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 3<<20)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var out bytes.Buffer
	fs := newProgressFS(mem, &out, 0)
	r, err := fs.Open("/snapshot.1")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := r.Read(buf); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	want := regexp.MustCompile(`(?m)^keeper tool: read 3\.0 MiB of 3\.0 MiB \(100%\) in \d+s, now /snapshot\.1$`)
	if !want.MatchString(out.String()) || !bytes.Contains(out.Bytes(), []byte("read 1.0 MiB of 3.0 MiB (33%)")) {
		t.Fatalf("progress:\n%s", out.String())
	}

	// With the usual interval, a quick read says nothing.
	out.Reset()
	fs = newProgressFS(mem, &out, time.Hour)
	r2, _ := fs.Open("/snapshot.1")
	io.Copy(io.Discard, r2)
	r2.Close()
	if out.Len() != 0 {
		t.Fatalf("a quick read printed %q", out.String())
	}
}

func TestByteSize(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {3 << 30, "3.0 GiB"}, {1536 << 20, "1.5 GiB"}} {
		if got := byteSize(tt.n); got != tt.want {
			t.Errorf("byteSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
