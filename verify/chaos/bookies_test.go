package chaos

import (
	"encoding/binary"
	"testing"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
)

// frames encodes requests as a client would send them.
func frames(t testing.TB, reqs ...*bkproto.Request) []byte {
	t.Helper()
	var out []byte
	for i, r := range reqs {
		op := bkproto.OperationType_ADD_ENTRY
		if r.ReadRequest != nil {
			op = bkproto.OperationType_READ_ENTRY
		}
		r.Header = bkproto.NewHeader(op, uint64(i))
		var err error
		if out, err = bkproto.AppendFrame(out, r); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestRequestTap(t *testing.T) {
	fence := &bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: ptr(int64(7)), EntryId: ptr(int64(-1)),
		MasterKey: key[:], Flag: bkproto.ReadRequest_FENCE_LEDGER.Enum()}}
	plainRead := &bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: ptr(int64(7)), EntryId: ptr(int64(3))}}
	stream := frames(t,
		addReq(7, 0, false),
		addReq(7, 1, true),
		addReq(7, 1, true),
		addReq(7, 2, true),
		fence, plainRead, fence,
		addReq(8, 0, true))
	tests := []struct {
		name   string
		chunks []int // sizes the stream is cut into; the rest goes last
		prefix []byte
		want7  [2]int // distinct recovery adds, fence reads of ledger 7
	}{
		{"whole", nil, nil, [2]int{2, 2}},
		{"byte by byte", repeat(1, len(stream)-1), nil, [2]int{2, 2}},
		{"split in length prefixes", []int{2, 5, 3, 17}, nil, [2]int{2, 2}},
		{"garbage first stops parsing", nil, []byte{0xff, 0xff, 0xff, 0xff}, [2]int{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bs := &Bookies{recoveryAdds: map[int64]map[int64]int{}, fenceReads: map[int64]int{}}
			tap := &requestTap{note: bs.note}
			data := append(append([]byte(nil), tt.prefix...), stream...)
			for _, n := range tt.chunks {
				if _, err := tap.Write(data[:n]); err != nil {
					t.Fatal(err)
				}
				data = data[n:]
			}
			if _, err := tap.Write(data); err != nil {
				t.Fatal(err)
			}
			adds, fences := bs.RecoveryAdds(7)
			if got := [2]int{adds, fences}; got != tt.want7 {
				t.Errorf("ledger 7: recovery adds, fence reads = %v, want %v", got, tt.want7)
			}
		})
	}
}

// TestRequestTapV2: the tap counts recovery adds and fence reads sent as
// v2 packets (docs/bookkeeper-protocol.md §6.2), built here byte by byte.
func TestRequestTapV2(t *testing.T) {
	frame := func(parts ...[]byte) []byte {
		var p []byte
		for _, x := range parts {
			p = append(p, x...)
		}
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(p))), p...)
	}
	u32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	u64 := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
	entry := func(e int64) []byte {
		return bkproto.EncodeEntry(7, e, e-1, e+1, bkproto.DigestCRC32C, nil, []byte("x"))
	}
	var stream []byte
	for _, f := range [][]byte{
		frame(u32(0x02010000), key[:], entry(0)), // a plain add
		frame(u32(0x02010006), key[:], entry(1)), // recovery adds: RECOVERY_ADD | HIGH_PRIORITY
		frame(u32(0x02010006), key[:], entry(1)),
		frame(u32(0x02010006), key[:], entry(2)),
		frame(u32(0x02020005), u64(7), u64(-1), key[:]), // fence reads: DO_FENCING | HIGH_PRIORITY
		frame(u32(0x02020000), u64(7), u64(3)),          // a plain read
		frame(u32(0x02020005), u64(7), u64(0), key[:]),
	} {
		stream = append(stream, f...)
	}
	bs := &Bookies{recoveryAdds: map[int64]map[int64]int{}, fenceReads: map[int64]int{}}
	tap := &requestTap{note: bs.note}
	for len(stream) > 0 { // in 7-byte pieces
		n := min(7, len(stream))
		if _, err := tap.Write(stream[:n]); err != nil {
			t.Fatal(err)
		}
		stream = stream[n:]
	}
	if adds, fences := bs.RecoveryAdds(7); adds != 2 || fences != 2 {
		t.Fatalf("ledger 7: %d distinct recovery adds and %d fence reads, want 2 and 2", adds, fences)
	}
}

var key = bkproto.MasterKey([]byte("pw"))

// addReq is a valid add request for entry e of ledger.
func addReq(ledger, e int64, recovery bool) *bkproto.Request {
	body := bkproto.EncodeEntry(ledger, e, e-1, e+1, bkproto.DigestCRC32C, nil, []byte("x"))
	return bookierpc.AddRequest(ledger, e, key[:], body, recovery)
}

func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func FuzzRequestTap(f *testing.F) {
	f.Add(frames(f, addReq(1, 2, true)), 3)
	f.Add([]byte{0, 0, 0, 1, 0xff}, 1)
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		bs := &Bookies{recoveryAdds: map[int64]map[int64]int{}, fenceReads: map[int64]int{}}
		tap := &requestTap{note: bs.note}
		if cut >= 0 && cut < len(data) {
			_, _ = tap.Write(data[:cut])
			data = data[cut:]
		}
		if n, err := tap.Write(data); err != nil || n != len(data) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	})
}
