package chaos

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"keeper/ledgerstore/bkproto"
)

// chunkReader returns data in reads of the given sizes (the rest in one
// last read), then err.
type chunkReader struct {
	data   []byte
	chunks []int
	err    error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := len(r.data)
	if len(r.chunks) > 0 {
		n, r.chunks = min(r.chunks[0], n), r.chunks[1:]
	}
	n = copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

func TestFrameFilter(t *testing.T) {
	fence := &bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: ptr(int64(7)), EntryId: ptr(int64(-1)),
		MasterKey: key[:], Flag: bkproto.ReadRequest_FENCE_LEDGER.Enum()}}
	plainRead := &bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: ptr(int64(7)), EntryId: ptr(int64(3))}}
	readLAC := &bkproto.Request{ReadLacRequest: &bkproto.ReadLacRequest{LedgerId: ptr(int64(7))}}
	reqs := []*bkproto.Request{addReq(7, 0, false), fence, plainRead, readLAC, fence, addReq(7, 1, true)}
	var all []byte
	for i, r := range reqs {
		op := bkproto.OperationType_ADD_ENTRY
		switch {
		case r.ReadRequest != nil:
			op = bkproto.OperationType_READ_ENTRY
		case r.ReadLacRequest != nil:
			op = bkproto.OperationType_READ_LAC
		}
		r.Header = bkproto.NewHeader(op, uint64(i))
		var err error
		if all, err = bkproto.AppendFrame(all, r); err != nil {
			t.Fatal(err)
		}
	}
	var each [][]byte // each frame of all, as sent
	for rest := all; len(rest) > 0; {
		n, err := bkproto.ParseFrameLength([4]byte(rest), 0)
		if err != nil {
			t.Fatal(err)
		}
		each, rest = append(each, rest[:4+n]), rest[4+n:]
	}
	without := func(skip ...int) []byte {
		var out []byte
		for i, f := range each {
			if !slices.Contains(skip, i) {
				out = append(out, f...)
			}
		}
		return out
	}
	garbage := []byte{0xff, 0xff, 0xff, 0xff, 1, 2}
	tests := []struct {
		name   string
		prefix []byte
		cut    int // drop the last cut bytes (a torn last frame)
		chunks []int
		arms   []DropKind
		want   []byte
	}{
		{"nothing armed", nil, 0, nil, nil, all},
		{"first fence", nil, 0, nil, []DropKind{DropFence}, without(1)},
		{"both fences byte by byte", nil, 0, repeat(1, len(all)), []DropKind{DropFence, DropFence}, without(1, 4)},
		{"read-lac in odd chunks", nil, 0, []int{3, 7, 50, 2}, []DropKind{DropReadLAC}, without(3)},
		{"fence and read-lac", nil, 0, []int{5}, []DropKind{DropReadLAC, DropFence}, without(1, 3)},
		{"torn last frame passes as is", nil, 3, nil, []DropKind{DropFence, DropFence}, without(1, 4)[:len(without(1, 4))-3]},
		{"garbage first: nothing parsed or dropped", garbage, 0, []int{2}, []DropKind{DropFence},
			append(append([]byte(nil), garbage...), all...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bs := &Bookies{}
			for _, k := range tt.arms {
				bs.DropOne("h", &Bookie{Name: "b1"}, k)
			}
			bs.DropOne("w1", &Bookie{Name: "b1"}, DropFence) // another node's: never used here
			bs.DropOne("h", &Bookie{Name: "b2"}, DropFence)  // another bookie's
			data := append(append([]byte(nil), tt.prefix...), all[:len(all)-tt.cut]...)
			src := &chunkReader{data: data, chunks: tt.chunks, err: io.EOF}
			got, err := io.ReadAll(bs.drops.filter("h", "b1", src))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("passed on %d bytes, want %d", len(got), len(tt.want))
			}
			fired := 0
			for _, k := range []DropKind{DropFence, DropReadLAC} {
				fired += bs.Dropped(k)
			}
			if left := bs.Disarm(); len(left) != len(tt.arms)-fired+2 {
				t.Errorf("left armed %v after %d drops of %d", left, fired, len(tt.arms))
			}
		})
	}
}

func TestFrameFilterError(t *testing.T) {
	boom := errors.New("reset")
	data := frames(t, addReq(1, 0, false))
	f := (&dropTable{}).filter("h", "b1", &chunkReader{data: data[:len(data)-1], chunks: []int{5}, err: boom})
	got, err := io.ReadAll(f)
	if !errors.Is(err, boom) || !bytes.Equal(got, data[:len(data)-1]) {
		t.Errorf("ReadAll = %d bytes, %v; want %d bytes, %v", len(got), err, len(data)-1, boom)
	}
}

func TestDropKindOf(t *testing.T) {
	lastRead := &bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: ptr(int64(1)), EntryId: ptr(int64(-1))}}
	tests := []struct {
		req  *bkproto.Request
		want DropKind
		v2   bool
	}{
		// v2 has no READ_LAC: a reader learns the LAC from a plain read of
		// entry -1, which in v3 is not a LAC read.
		{lastRead, 0, false},
		{lastRead, DropReadLAC, true},
		{&bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: ptr(int64(1)), EntryId: ptr(int64(2))}}, 0, true},
		{&bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: ptr(int64(1)), EntryId: ptr(int64(-1)),
			Flag: bkproto.ReadRequest_FENCE_LEDGER.Enum(), MasterKey: key[:]}}, DropFence, true},
		{addReq(1, 0, true), 0, false},
		{&bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: ptr(int64(1)), EntryId: ptr(int64(2))}}, 0, false},
		{&bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: ptr(int64(1)), EntryId: ptr(int64(2)),
			Flag: bkproto.ReadRequest_FENCE_LEDGER.Enum(), MasterKey: key[:]}}, DropFence, false},
		{&bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: ptr(int64(1)), EntryId: ptr(int64(-1)),
			Flag: bkproto.ReadRequest_ENTRY_PIGGYBACK.Enum()}}, 0, false},
		{&bkproto.Request{ReadLacRequest: &bkproto.ReadLacRequest{LedgerId: ptr(int64(1))}}, DropReadLAC, false},
	}
	for _, tt := range tests {
		if got := dropKindOf(tt.req, tt.v2); got != tt.want {
			t.Errorf("dropKindOf(%v, v2 %v) = %v, want %v", tt.req, tt.v2, got, tt.want)
		}
	}
}

// FuzzFrameFilter checks that a filter with nothing armed passes any
// stream on unchanged, however it is cut, and one dropping every request
// never grows it.
func FuzzFrameFilter(f *testing.F) {
	f.Add(frames(f, addReq(1, 2, true)), 3)
	f.Add([]byte{0, 0, 0, 1, 0xff}, 1)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 2, 8, 1}, 6)
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		chunks := []int{max(cut, 1)}
		got, err := io.ReadAll((&dropTable{}).filter("h", "b1", &chunkReader{data: data, chunks: chunks, err: io.EOF}))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("passed on %x, %v; want %x", got, err, data)
		}
		all := &frameFilter{src: &chunkReader{data: data, chunks: chunks, err: io.EOF}, drop: func([]byte) bool { return true }}
		if got, err := io.ReadAll(all); err != nil || len(got) > len(data) {
			t.Fatalf("dropping all passed on %d of %d bytes, %v", len(got), len(data), err)
		}
	})
}
