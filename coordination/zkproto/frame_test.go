package zkproto

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestReadFrame covers lengths at and beyond the bounds and short input.
func TestReadFrame(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		maxLen  int
		want    string // payload when wantErr is nil
		wantErr error
	}{
		{name: "empty input", in: "", wantErr: io.EOF},
		{name: "partial length", in: "00 00", wantErr: io.ErrUnexpectedEOF},
		{name: "zero length", in: "00 00 00 00", want: ""},
		{name: "payload", in: "00 00 00 03 01 02 03 04", want: "01 02 03"},
		{name: "partial payload", in: "00 00 00 03 01 02", wantErr: io.ErrUnexpectedEOF},
		{name: "length equal to max", in: "00 00 00 02 aa bb", maxLen: 2, want: "aa bb"},
		{name: "length above max", in: "00 00 00 03 aa bb cc", maxLen: 2, wantErr: ErrFrameTooLarge},
		{name: "default max 0xfffff", in: "00 10 00 00", wantErr: ErrFrameTooLarge},
		{name: "negative length", in: "ff ff ff ff", wantErr: ErrFrameTooLarge},
		{name: "min int32 length", in: "80 00 00 00", wantErr: ErrFrameTooLarge},
		{name: "four-letter word as length", in: "'ruok", wantErr: ErrFrameTooLarge},
	}
	for _, tt := range tests {
		for _, bufCap := range []int{0, 2, 64} {
			got, err := ReadFrame(bytes.NewReader(hx(t, tt.in)), make([]byte, 0, bufCap), tt.maxLen)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("%s (buf %d): err %v, want %v", tt.name, bufCap, err, tt.wantErr)
				}
				if tt.wantErr == io.EOF && err != io.EOF {
					t.Errorf("%s: clean EOF must be returned unwrapped, got %v", tt.name, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(got, hx(t, tt.want)) {
				t.Errorf("%s (buf %d): got % x, %v; want %s", tt.name, bufCap, got, err, tt.want)
			}
		}
	}
}

// failAfterPrefix yields a length prefix and then fails the test if read
// again, proving that a bad length is rejected before the body is touched.
type failAfterPrefix struct {
	t      *testing.T
	prefix []byte
}

func (r *failAfterPrefix) Read(p []byte) (int, error) {
	if len(r.prefix) == 0 {
		r.t.Fatal("ReadFrame read past a rejected length")
	}
	n := copy(p, r.prefix)
	r.prefix = r.prefix[n:]
	return n, nil
}

// TestReadFrameRejectsBeforeReading checks that a huge length fails without
// reading (or allocating) a body.
func TestReadFrameRejectsBeforeReading(t *testing.T) {
	r := &failAfterPrefix{t: t, prefix: hx(t, "7f ff ff ff")}
	if _, err := ReadFrame(r, nil, 1<<20); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("err %v, want ErrFrameTooLarge", err)
	}
}

// TestReadFrameStream reads consecutive frames from a reader that returns
// one byte at a time, reusing one buffer without allocating.
func TestReadFrameStream(t *testing.T) {
	var stream []byte
	payloads := [][]byte{{1}, {}, bytes.Repeat([]byte{7}, 100), {2, 3}}
	for _, p := range payloads {
		stream = AppendFrame(stream, p)
	}
	r := iotest.OneByteReader(bytes.NewReader(stream))
	buf := make([]byte, 0, 128)
	for i, want := range payloads {
		got, err := ReadFrame(r, buf, 0)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("frame %d: got % x, %v; want % x", i, got, err, want)
		}
	}
	if _, err := ReadFrame(r, buf, 0); err != io.EOF {
		t.Fatalf("after last frame: %v, want io.EOF", err)
	}

	br := bytes.NewReader(stream)
	allocs := testing.AllocsPerRun(100, func() {
		br.Reset(stream)
		for range payloads {
			if _, err := ReadFrame(br, buf, 0); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("ReadFrame with a large enough buffer allocated %v times per run", allocs)
	}
}

// TestIsFourLetterWord checks every command of docs/zookeeper-protocol.md §8.1 and some near
// misses.
func TestIsFourLetterWord(t *testing.T) {
	for _, w := range []string{"ruok", "stat", "srvr", "cons", "crst", "srst", "envi", "conf",
		"wchs", "wchc", "wchp", "dump", "isro", "dirs", "mntr", "gtmk", "stmk", "hash"} {
		if got, ok := IsFourLetterWord([4]byte([]byte(w))); !ok || got != w {
			t.Errorf("IsFourLetterWord(%q) = %q, %v", w, got, ok)
		}
	}
	for _, w := range []string{"RUOK", "xyzw", "ruo\x00", "\x00\x00\x00\x2d", "\xff\xf4\xff\xfd"} {
		if got, ok := IsFourLetterWord([4]byte([]byte(w))); ok {
			t.Errorf("IsFourLetterWord(%q) = %q, true", w, got)
		}
	}
}
