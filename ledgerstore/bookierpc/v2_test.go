package bookierpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"keeper/ledgerstore/bkproto"
)

// fakeBookie accepts one connection and lets the test read the client's
// packets and write hand-built answers (docs/bookkeeper-protocol.md §6.2).
type fakeBookie struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialFake(t *testing.T) (*Client, *fakeBookie) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, _ := ln.Accept()
		accepted <- nc
	}()
	c, err := DialV2(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	nc := <-accepted
	if nc == nil {
		t.Fatal("no connection")
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	return c, &fakeBookie{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// next reads one packet: its header, and the ledger and entry it names.
func (f *fakeBookie) next() (hdr uint32, ledger, entry int64, packet []byte) {
	f.t.Helper()
	p, err := bkproto.ReadFrame(f.r, nil, 0)
	if err != nil {
		f.t.Fatalf("fake bookie: %v", err)
	}
	hdr = binary.BigEndian.Uint32(p)
	off := 4
	if hdr>>16&0xff == 1 { // an add: the ids are the entry's
		off += bkproto.MasterKeyBytes
	}
	return hdr, int64(binary.BigEndian.Uint64(p[off:])), int64(binary.BigEndian.Uint64(p[off+8:])), p
}

// answer writes a response of opcode op.
func (f *fakeBookie) answer(op byte, rc uint32, ledger, entry int64, data []byte) {
	f.t.Helper()
	p := binary.BigEndian.AppendUint32(nil, uint32(24+len(data)))
	p = binary.BigEndian.AppendUint32(p, 2<<24|uint32(op)<<16)
	p = binary.BigEndian.AppendUint32(p, rc)
	p = binary.BigEndian.AppendUint64(p, uint64(ledger))
	p = binary.BigEndian.AppendUint64(p, uint64(entry))
	if _, err := f.nc.Write(append(p, data...)); err != nil {
		f.t.Fatal(err)
	}
}

// quiet fails if the client sends anything within a short while: it is
// waiting, as it must, for an answer first.
func (f *fakeBookie) quiet(what string) {
	f.t.Helper()
	_ = f.nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := f.r.Peek(1); err == nil {
		f.t.Fatalf("%s: the client sent a packet", what)
	}
	_ = f.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
}

func readReq(ledger, entry int64, fence bool) *bkproto.Request {
	r := &bkproto.ReadRequest{LedgerId: proto.Int64(ledger), EntryId: proto.Int64(entry)}
	if fence {
		r.Flag = bkproto.ReadRequest_FENCE_LEDGER.Enum()
		r.MasterKey = make([]byte, bkproto.MasterKeyBytes)
		return &bkproto.Request{Header: &bkproto.BKPacketHeader{Priority: proto.Uint32(100)}, ReadRequest: r}
	}
	return &bkproto.Request{ReadRequest: r}
}

// TestV2Packets: what the client puts on the wire for each request.
func TestV2Packets(t *testing.T) {
	c, f := dialFake(t)
	key := bytes.Repeat([]byte{9}, bkproto.MasterKeyBytes)
	ent := bkproto.EncodeEntry(5, 2, 1, 10, bkproto.DigestCRC32C, nil, []byte("0123456789"))
	cases := []struct {
		name string
		req  *bkproto.Request
		want []byte
	}{
		{"add", AddRequest(5, 2, key, ent, false), append(append([]byte{2, 1, 0, 0}, key...), ent...)},
		{"recovery add", AddRequest(5, 2, key, ent, true), append(append([]byte{2, 1, 0, 2}, key...), ent...)},
		{"read", readReq(5, -1, false), []byte{2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"long poll", &bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(5), EntryId: proto.Int64(-1),
			PreviousLAC: proto.Int64(3), TimeOut: proto.Int64(1000), Flag: bkproto.ReadRequest_ENTRY_PIGGYBACK.Enum()}},
			[]byte{2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	}
	for _, tc := range cases {
		ch := c.Go(tc.req)
		_, ledger, entry, p := f.next()
		if !bytes.Equal(p, tc.want) {
			t.Fatalf("%s: sent % x\nwant % x", tc.name, p, tc.want)
		}
		op := p[1]
		f.answer(op, 0, ledger, entry, nil)
		if res := <-ch; res.Err != nil || bkproto.ResponseStatus(res.Resp) != bkproto.StatusCode_EOK {
			t.Fatalf("%s: %v %v", tc.name, res.Resp, res.Err)
		}
	}
	for _, req := range []*bkproto.Request{
		{ReadLacRequest: &bkproto.ReadLacRequest{LedgerId: proto.Int64(5)}},
		{ForceLedgerRequest: &bkproto.ForceLedgerRequest{LedgerId: proto.Int64(5)}},
		{GetBookieInfoRequest: &bkproto.GetBookieInfoRequest{Requested: proto.Int64(1)}},
	} {
		if _, err := c.Call(context.Background(), req); !errors.Is(err, bkproto.ErrNoV2Form) {
			t.Fatalf("%v: %v, want ErrNoV2Form", req, err)
		}
	}
	f.quiet("after requests v2 cannot express")
}

// TestV2Matching: answers go to the request of their key, in any order
// across keys; a second request of a key waits for the first one's
// answer, even when the first one's caller gave up; stray answers are
// dropped; an unknown return code ends the connection.
func TestV2Matching(t *testing.T) {
	c, f := dialFake(t)
	a := c.Go(readReq(1, 0, false))
	b := c.Go(readReq(1, 1, false))
	f.next()
	f.next()
	f.answer(2, 2, 1, 1, nil) // ENOENTRY for entry 1 first
	f.answer(2, 0, 1, 0, []byte("entry zero"))
	if res := <-b; bkproto.ResponseStatus(res.Resp) != bkproto.StatusCode_ENOENTRY {
		t.Fatalf("entry 1: %v %v", res.Resp, res.Err)
	}
	if res := <-a; string(res.Resp.GetReadResponse().GetBody()) != "entry zero" {
		t.Fatalf("entry 0: %v %v", res.Resp, res.Err)
	}

	// A plain read of the last entry is on the wire; a fencing read of the
	// same key must not go out, nor take its answer, until it is answered,
	// even after the plain read's caller stopped waiting.
	ctx, cancel := context.WithCancel(context.Background())
	plain := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, readReq(1, -1, false))
		plain <- err
	}()
	if hdr, _, _, _ := f.next(); hdr != 0x02020000 {
		t.Fatalf("plain read header %#x", hdr)
	}
	cancel()
	if err := <-plain; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
	fence := c.Go(readReq(1, -1, true))
	f.quiet("fencing read behind a plain read of the same key")
	f.answer(2, 0, 1, -1, []byte("plain"))
	if hdr, _, _, _ := f.next(); hdr != 0x02020005 {
		t.Fatalf("fencing read header %#x, want DO_FENCING|HIGH_PRIORITY", hdr)
	}
	select {
	case res := <-fence:
		t.Fatalf("the fencing read took the plain read's answer: %v", res.Resp)
	default:
	}
	f.answer(2, 104, 1, -1, nil)
	if res := <-fence; bkproto.ResponseStatus(res.Resp) != bkproto.StatusCode_EFENCED {
		t.Fatalf("fencing read: %v %v", res.Resp, res.Err)
	}

	// A stray answer is dropped; the connection goes on.
	f.answer(1, 0, 9, 9, nil)
	add := c.Go(AddRequest(3, 0, make([]byte, 20), bkproto.EncodeEntry(3, 0, -1, 1, bkproto.DigestDummy, nil, []byte("x")), false))
	f.next()
	f.answer(1, 107, 3, 0, nil)
	if res := <-add; bkproto.ResponseStatus(res.Resp) != bkproto.StatusCode_EUNKNOWNLEDGERSTATE {
		t.Fatalf("add: %v %v", res.Resp, res.Err)
	}

	// An unknown return code: the connection is not trusted any more.
	last := c.Go(readReq(1, 5, false))
	f.next()
	f.answer(2, 3, 1, 5, nil)
	if res := <-last; !errors.Is(res.Err, ErrClientClosed) {
		t.Fatalf("read answered with code 3: %v %v", res.Resp, res.Err)
	}
	<-c.Done()
}

// TestV2LostAnswer: a request whose caller gave up and whose answer never
// comes holds its key; a later request of the key that waits out its own
// deadline behind it closes the connection, so that the next connection
// starts clean, and is never sent on this one.
func TestV2LostAnswer(t *testing.T) {
	c, f := dialFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Call(ctx, readReq(1, -1, false)); !errors.Is(err, context.Canceled) {
		t.Fatalf("read whose caller gives up: %v", err)
	}
	f.next()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := c.Call(ctx2, readReq(1, -1, true)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("fencing read behind a lost one: %v", err)
	}
	<-c.Done()
	if _, err := f.r.Peek(1); err == nil {
		t.Fatal("the fencing read was sent behind the lost read")
	}
}

// TestV2BatchRead sends two batch reads from the same entry: each is
// matched to its answer by request id, whatever the order of the answers.
// A v3 connection refuses a batch read.
func TestV2BatchRead(t *testing.T) {
	c, f := dialFake(t)
	ctx := context.Background()
	read := &bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(7), EntryId: proto.Int64(4)}}
	type result struct {
		resp *bkproto.Response
		err  error
	}
	results := make([]chan result, 2)
	ids := make([]int64, 2)
	for i := range results {
		results[i] = make(chan result, 1)
		go func() {
			resp, err := c.BatchRead(ctx, read, int32(10+i), 1<<20)
			results[i] <- result{resp, err}
		}()
	}
	for range 2 {
		hdr, ledger, entry, p := f.next()
		if op := bkproto.V2OpCode(hdr >> 16 & 0xff); op != bkproto.V2BatchReadEntry || ledger != 7 || entry != 4 {
			t.Fatalf("packet op %d ledger %d entry %d", op, ledger, entry)
		}
		maxCount := int32(binary.BigEndian.Uint32(p[28:]))
		ids[maxCount-10] = int64(binary.BigEndian.Uint64(p[20:]))
	}
	if ids[0] == ids[1] {
		t.Fatalf("both batch reads carry request id %d", ids[0])
	}
	bodies := [][]byte{bkproto.AppendV2BatchEntry(nil, []byte("first")), bkproto.AppendV2BatchEntry(nil, []byte("second"))}
	for i := 1; i >= 0; i-- { // answered in reverse order
		f.answer(byte(bkproto.V2BatchReadEntry), 0, 7, 4, append(binary.BigEndian.AppendUint64(nil, uint64(ids[i])), bodies[i]...))
	}
	for i := range results {
		r := <-results[i]
		if r.err != nil || bkproto.ResponseStatus(r.resp) != bkproto.StatusCode_EOK ||
			!bytes.Equal(r.resp.GetReadResponse().GetBody(), bodies[i]) {
			t.Fatalf("batch %d: %v, %v", i, r.resp, r.err)
		}
	}
}

func TestBatchReadNeedsV2(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, _ := ln.Accept()
		accepted <- nc
	}()
	defer func() {
		if nc := <-accepted; nc != nil {
			nc.Close()
		}
	}()
	c, err := Dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	read := &bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(7), EntryId: proto.Int64(4)}}
	if _, err := c.BatchRead(context.Background(), read, 10, 1<<20); !errors.Is(err, bkproto.ErrNoV2Form) {
		t.Fatalf("batch read over v3: %v", err)
	}
}
