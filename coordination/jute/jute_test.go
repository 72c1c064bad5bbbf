package jute

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

type sample struct {
	B    byte
	OK   bool
	I    int32
	L    int64
	Buf  []byte
	S    string
	Strs []string
}

func (s *sample) Encode(e *Encoder) {
	e.Byte(s.B)
	e.Bool(s.OK)
	e.Int(s.I)
	e.Long(s.L)
	e.Buffer(s.Buf)
	e.String(s.S)
	e.Strings(s.Strs)
}

func (s *sample) Decode(d *Decoder) {
	s.B = d.Byte()
	s.OK = d.Bool()
	s.I = d.Int()
	s.L = d.Long()
	s.Buf = d.Buffer()
	s.S = d.String()
	s.Strs = d.Strings()
}

func TestEncodingBytes(t *testing.T) {
	tests := []struct {
		name string
		in   sample
		want []byte
	}{
		{
			name: "null buffer and vector",
			in:   sample{B: 7, OK: true, I: -2, L: 1 << 40, Buf: nil, S: "/a", Strs: nil},
			want: []byte{7, 1, 0xff, 0xff, 0xff, 0xfe, 0, 0, 1, 0, 0, 0, 0, 0,
				0xff, 0xff, 0xff, 0xff, 0, 0, 0, 2, '/', 'a', 0xff, 0xff, 0xff, 0xff},
		},
		{
			name: "empty buffer and vector",
			in:   sample{Buf: []byte{}, Strs: []string{}},
			want: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
				0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		},
		{
			name: "strings",
			in:   sample{Buf: []byte{9}, Strs: []string{"x", ""}},
			want: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
				0, 0, 0, 1, 9, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 'x', 0, 0, 0, 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Marshal(&tc.in)
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("encode = % x, want % x", got, tc.want)
			}
			var back sample
			if err := Unmarshal(got, &back, 0); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tc.in) {
				t.Fatalf("decode = %+v, want %+v", back, tc.in)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     []byte
		maxLen int
		want   error
	}{
		{"short int", []byte{0, 0, 1}, 0, ErrShort},
		{"negative length", []byte{0xff, 0xff, 0xff, 0xfe}, 0, ErrLength},
		{"length beyond input", []byte{0, 0, 0, 5, 1, 2}, 0, ErrLength},
		{"length beyond max", []byte{0, 0, 0, 3, 1, 2, 3}, 2, ErrLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(tc.in, tc.maxLen)
			_ = d.Buffer()
			if !errors.Is(d.Err(), tc.want) {
				t.Fatalf("err = %v, want %v", d.Err(), tc.want)
			}
			// Sticky: later reads return zero values.
			if d.Long() != 0 || !errors.Is(d.Err(), tc.want) {
				t.Fatalf("error not sticky: %v", d.Err())
			}
		})
	}
	if err := Unmarshal([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
		0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1}, &sample{}, 0); !errors.Is(err, ErrTrailing) {
		t.Fatalf("trailing byte: err = %v", err)
	}
}

func TestVectorCountBoundedByInput(t *testing.T) {
	// A count of a million strings with no bytes behind it must fail before
	// anything is allocated for it.
	d := NewDecoder([]byte{0, 0x0f, 0x42, 0x40}, 1<<30)
	if got := d.Strings(); got != nil || !errors.Is(d.Err(), ErrLength) {
		t.Fatalf("got %v, err %v", got, d.Err())
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Marshal(&sample{S: "/zookeeper", Strs: []string{"a", "b"}, Buf: []byte("x")}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var s sample
		if err := Unmarshal(b, &s, 1<<16); err != nil {
			return
		}
		again := Marshal(&s)
		if !bytes.Equal(again, b) {
			// Only a bool byte other than 0/1 or a null string may differ.
			var s2 sample
			if err := Unmarshal(again, &s2, 1<<16); err != nil || !reflect.DeepEqual(s, s2) {
				t.Fatalf("round trip: %+v -> %+v (err %v)", s, s2, err)
			}
		}
	})
}
