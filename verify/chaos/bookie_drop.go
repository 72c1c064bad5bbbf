package chaos

import (
	"fmt"
	"io"
	"slices"
	"sync"

	"keeper/ledgerstore/bkproto"
)

// DropKind names a kind of client request a bookie front can swallow.
type DropKind int

// The kinds of request a front can drop.
const (
	// DropFence is a READ_ENTRY with the FENCE_LEDGER flag: a recovery's
	// fencing LAC read (entry −1) or one of its fenced reads forward.
	DropFence DropKind = iota + 1
	// DropReadLAC is a reader learning the LAC: a READ_LAC request, or in
	// v2, which has none, a plain read of entry −1.
	DropReadLAC
)

// String names the kind as the figures do.
func (k DropKind) String() string {
	switch k {
	case DropFence:
		return "fence"
	case DropReadLAC:
		return "read-lac"
	}
	return fmt.Sprintf("DropKind(%d)", int(k))
}

// dropKindOf returns the kind of req, 0 if no DropKind matches it. v2
// says whether req came as a v2 packet.
func dropKindOf(req *bkproto.Request, v2 bool) DropKind {
	// An unset proto2 enum reads as its first value, so the flag is
	// checked for presence.
	rd := req.GetReadRequest()
	switch {
	case rd != nil && rd.Flag != nil && *rd.Flag == bkproto.ReadRequest_FENCE_LEDGER:
		return DropFence
	case req.GetReadLacRequest() != nil:
		return DropReadLAC
	case v2 && rd != nil && rd.Flag == nil && rd.GetEntryId() == bkproto.LastAddConfirmed:
		return DropReadLAC
	}
	return 0
}

// decodeRequest decodes a client's request frame in either protocol, as
// a bookie does: v3, or else v2 (a v2 packet never parses as v3). v2
// reports which. A frame of neither gives a nil request.
func decodeRequest(frame []byte) (req *bkproto.Request, v2 bool) {
	if req, err := bkproto.DecodeRequest(frame); req != nil {
		if err != nil {
			return nil, false
		}
		return req, false
	}
	req, _, err := bkproto.DecodeV2Request(frame)
	if err != nil {
		return nil, true
	}
	return req, true
}

// dropArm is one request the fronts are to swallow: the next of its kind
// that node from sends to bookie (a node name, "b1"...).
type dropArm struct {
	from, bookie string
	kind         DropKind
}

// dropTable holds the armed drops and counts the ones done. The zero
// value is ready for use.
type dropTable struct {
	mu      sync.Mutex
	armed   []dropArm
	dropped map[DropKind]int
}

// DropOne arms the fronts to swallow the next request of kind that node
// from sends to b: the request frame is taken out of the stream, the
// connection stays open, and the client hears nothing back for it (it
// must time out, or do without that bookie's answer). Each call drops
// one request at most.
func (bs *Bookies) DropOne(from string, b *Bookie, kind DropKind) {
	d := &bs.drops
	d.mu.Lock()
	defer d.mu.Unlock()
	d.armed = append(d.armed, dropArm{from: from, bookie: b.Name, kind: kind})
}

// Disarm forgets the drops armed and not done, and describes each.
func (bs *Bookies) Disarm() []string {
	d := &bs.drops
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, a := range d.armed {
		out = append(out, fmt.Sprintf("%s %s→%s", a.kind, a.from, a.bookie))
	}
	d.armed = nil
	return out
}

// Dropped returns how many requests of kind the fronts have swallowed.
func (bs *Bookies) Dropped(kind DropKind) int {
	d := &bs.drops
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dropped[kind]
}

// take reports whether the request frame (a frame's body) that node from
// sends to bookie is to be dropped, and if so uses up the drop armed for
// it. Only a link with an armed drop has its frames decoded.
func (d *dropTable) take(from, bookie string, frame []byte) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.ContainsFunc(d.armed, func(a dropArm) bool { return a.from == from && a.bookie == bookie }) {
		return false
	}
	req, v2 := decodeRequest(frame)
	if req == nil {
		return false
	}
	arm := dropArm{from: from, bookie: bookie, kind: dropKindOf(req, v2)}
	i := slices.Index(d.armed, arm)
	if arm.kind == 0 || i < 0 {
		return false
	}
	d.armed = slices.Delete(d.armed, i, i+1)
	if d.dropped == nil {
		d.dropped = map[DropKind]int{}
	}
	d.dropped[arm.kind]++
	return true
}

// filter returns what of src (a client's bytes to bookie, from node
// from) the front passes on: src without the frames the table drops.
func (d *dropTable) filter(from, bookie string, src io.Reader) io.Reader {
	return &frameFilter{src: src, drop: func(frame []byte) bool { return d.take(from, bookie, frame) }}
}

// frameFilter reads a stream of frames (a 4-byte length, then a v3
// request or a v2 packet) from src and returns it without the frames drop reports true
// for. It passes on only whole frames, each as soon as it has arrived;
// after a length it cannot parse it passes everything on unparsed, and at
// the end of src it passes on a torn last frame as it is.
type frameFilter struct {
	src  io.Reader
	drop func(frame []byte) bool

	chunk []byte
	buf   []byte // bytes read, not yet decided
	out   []byte // bytes to pass on, not yet read
	raw   bool   // framing lost: pass everything on
	err   error  // src's error, returned once out is drained
}

func (f *frameFilter) Read(p []byte) (int, error) {
	for len(f.out) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		if f.chunk == nil {
			f.chunk = make([]byte, 32<<10)
		}
		n, err := f.src.Read(f.chunk)
		f.push(f.chunk[:n])
		if err != nil {
			f.err = err
			f.out = append(f.out, f.buf...)
			f.buf = nil
		}
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	return n, nil
}

// push takes bytes read from src.
func (f *frameFilter) push(p []byte) {
	if f.raw {
		f.out = append(f.out, p...)
		return
	}
	f.buf = append(f.buf, p...)
	for len(f.buf) >= bkproto.FrameLengthBytes {
		n, err := bkproto.ParseFrameLength([bkproto.FrameLengthBytes]byte(f.buf), bkproto.DefaultMaxFrameBytes)
		if err != nil {
			f.raw = true
			f.out = append(f.out, f.buf...)
			f.buf = nil
			return
		}
		end := bkproto.FrameLengthBytes + n
		if len(f.buf) < end {
			return
		}
		if !f.drop(f.buf[bkproto.FrameLengthBytes:end]) {
			f.out = append(f.out, f.buf[:end]...)
		}
		f.buf = f.buf[end:]
	}
}
