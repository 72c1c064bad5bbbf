package bookie

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookie/journal"
)

func TestAddAndRead(t *testing.T) {
	b := newEnv(t, false).start()
	c := dial(t, b)
	addEntries(t, c, 7, 0, 20)
	for e := int64(0); e < 20; e++ {
		checkEntry(t, c, 7, e)
	}
	// The last-entry read returns entry 19, whose header carries LAC 18;
	// maxLAC is the bookie-known LAC.
	rr, err := c.Read(ctx(t), 7, bkproto.LastAddConfirmed)
	if err != nil {
		t.Fatal(err)
	}
	ent, err := bkproto.DecodeEntry(rr.GetBody(), bkproto.DigestCRC32C, nil, 7, bkproto.LastAddConfirmed)
	if err != nil || ent.EntryID != 19 || ent.LAC != 18 || rr.GetMaxLAC() != 18 {
		t.Fatalf("last entry %+v maxLAC %d err %v", ent.EntryHeader, rr.GetMaxLAC(), err)
	}
	// Honest absences: a ledger never seen, an entry never stored.
	_, err = c.Read(ctx(t), 99, 0)
	wantStatus(t, "read of an unknown ledger", err, bkproto.StatusCode_ENOLEDGER)
	_, err = c.Read(ctx(t), 7, 20)
	wantStatus(t, "read of an entry never added", err, bkproto.StatusCode_ENOENTRY)
}

func TestFencing(t *testing.T) {
	b := newEnv(t, false).start()
	c := dial(t, b)
	addEntries(t, c, 1, 0, 3)
	rr, err := c.FenceRead(ctx(t), 1, bkproto.LastAddConfirmed, testKey)
	if err != nil {
		t.Fatalf("fence: %v", err)
	}
	if h, _ := bkproto.ParseEntryHeader(rr.GetBody()); h.EntryID != 2 {
		t.Fatalf("fence read returned entry %d, want 2", h.EntryID)
	}
	err = c.Add(ctx(t), 1, 3, testKey, body(1, 3, 100), false)
	wantStatus(t, "normal add after fence", err, bkproto.StatusCode_EFENCED)
	// Recovery re-adds entry 3 (as recovery does) and must be accepted.
	if err := c.Add(ctx(t), 1, 3, testKey, body(1, 3, 100), true); err != nil {
		t.Fatalf("recovery add on a fenced ledger: %v", err)
	}
	checkEntry(t, c, 1, 3)

	// Fencing a ledger the bookie never saw answers NoSuchLedger/Entry,
	// but only after the fence is durable, and fences it.
	_, err = c.FenceRead(ctx(t), 2, bkproto.LastAddConfirmed, testKey)
	wantStatus(t, "fence of an empty ledger", err, bkproto.StatusCode_ENOENTRY)
	err = c.Add(ctx(t), 2, 0, testKey, body(2, 0, 100), false)
	wantStatus(t, "add to a ledger fenced before its first entry", err, bkproto.StatusCode_EFENCED)
}

func TestMasterKeyChecked(t *testing.T) {
	b := newEnv(t, false).start()
	c := dial(t, b)
	addEntries(t, c, 5, 0, 1)
	wrong := bkproto.MasterKey([]byte("other"))
	err := c.Add(ctx(t), 5, 1, wrong[:], body(5, 1, 100), false)
	wantStatus(t, "add with a wrong master key", err, bkproto.StatusCode_EUA)
	_, err = c.FenceRead(ctx(t), 5, bkproto.LastAddConfirmed, wrong[:])
	wantStatus(t, "fence with a wrong master key", err, bkproto.StatusCode_EUA)
	err = c.WriteLAC(ctx(t), 5, 0, wrong[:], bkproto.EncodeLAC(5, 0, bkproto.DigestCRC32C, nil))
	wantStatus(t, "write LAC with a wrong master key", err, bkproto.StatusCode_EUA)
	// The wrong key fenced nothing.
	addEntries(t, c, 5, 1, 2)
}

func TestLongPollLAC(t *testing.T) {
	b := newEnv(t, false).start()
	c := dial(t, b)
	addEntries(t, c, 3, 0, 3) // bookie-known LAC 1

	// Parked until an add carries LAC 2.
	call := c.Go(&bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(3),
		EntryId: proto.Int64(-1), PreviousLAC: proto.Int64(1), TimeOut: proto.Int64(60_000)}})
	eventually(t, "the long poll to park", func() bool { return b.lacs.count.Load() == 1 })
	select {
	case res := <-call:
		t.Fatalf("long poll answered before the LAC moved: %v", res.Resp)
	default:
	}
	addEntries(t, c, 3, 3, 4) // carries LAC 2
	res := <-call
	rr := res.Resp.GetReadResponse()
	if res.Err != nil || rr.GetStatus() != bkproto.StatusCode_EOK || rr.GetMaxLAC() != 2 {
		t.Fatalf("long poll: %v %v", res.Resp, res.Err)
	}
	if h, _ := bkproto.ParseEntryHeader(rr.GetBody()); h.EntryID != 3 {
		t.Fatalf("long poll returned entry %d, want the last one, 3", h.EntryID)
	}

	// With ENTRY_PIGGYBACK the answer carries entry previousLAC+1.
	call = c.Go(&bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(3),
		EntryId: proto.Int64(-1), PreviousLAC: proto.Int64(2), TimeOut: proto.Int64(60_000),
		Flag: bkproto.ReadRequest_ENTRY_PIGGYBACK.Enum()}})
	eventually(t, "the piggyback long poll to park", func() bool { return b.lacs.count.Load() == 1 })
	addEntries(t, c, 3, 4, 5) // carries LAC 3
	res = <-call
	rr = res.Resp.GetReadResponse()
	if res.Err != nil || rr.GetEntryId() != 3 || rr.GetMaxLAC() != 3 {
		t.Fatalf("piggyback long poll: %v %v", res.Resp, res.Err)
	}
	if _, err := bkproto.DecodeEntry(rr.GetBody(), bkproto.DigestCRC32C, nil, 3, 3); err != nil {
		t.Fatalf("piggybacked entry: %v", err)
	}

	// An explicit LAC wakes a long poll too.
	call = c.Go(&bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(3),
		EntryId: proto.Int64(-1), PreviousLAC: proto.Int64(3), TimeOut: proto.Int64(60_000)}})
	eventually(t, "the third long poll to park", func() bool { return b.lacs.count.Load() == 1 })
	if err := c.WriteLAC(ctx(t), 3, 4, testKey, bkproto.EncodeLAC(3, 4, bkproto.DigestCRC32C, nil)); err != nil {
		t.Fatal(err)
	}
	if res := <-call; res.Err != nil || res.Resp.GetReadResponse().GetMaxLAC() != 4 {
		t.Fatalf("long poll woken by an explicit LAC: %v %v", res.Resp, res.Err)
	}

	// A timeout answers with the current state.
	rr, err := c.LongPoll(ctx(t), 3, 100, 20*time.Millisecond, false)
	if err != nil || rr.GetMaxLAC() != 4 {
		t.Fatalf("timed-out long poll: %v %v", rr, err)
	}
	// Piggyback without previousLAC is a bad request.
	_, err = c.ReadRequest(ctx(t), &bkproto.ReadRequest{LedgerId: proto.Int64(3), EntryId: proto.Int64(-1),
		Flag: bkproto.ReadRequest_ENTRY_PIGGYBACK.Enum()})
	wantStatus(t, "piggyback without previousLAC", err, bkproto.StatusCode_EBADREQ)
	_, err = c.LongPoll(ctx(t), 404, 0, time.Second, false)
	wantStatus(t, "long poll of an unknown ledger", err, bkproto.StatusCode_ENOLEDGER)
}

func TestExplicitLAC(t *testing.T) {
	b := newEnv(t, false).start()
	c := dial(t, b)
	_, err := c.ReadLAC(ctx(t), 4)
	wantStatus(t, "read LAC of an unknown ledger", err, bkproto.StatusCode_ENOLEDGER)
	addEntries(t, c, 4, 0, 2)
	lacBody := bkproto.EncodeLAC(4, 1, bkproto.DigestCRC32C, nil)
	if err := c.WriteLAC(ctx(t), 4, 1, testKey, lacBody); err != nil {
		t.Fatal(err)
	}
	resp, err := c.ReadLAC(ctx(t), 4)
	if err != nil {
		t.Fatal(err)
	}
	if lac, err := bkproto.DecodeLAC(resp.GetLacBody(), bkproto.DigestCRC32C, nil, 4); err != nil || lac != 1 {
		t.Fatalf("lacBody: LAC %d, %v", lac, err)
	}
	if h, _ := bkproto.ParseEntryHeader(resp.GetLastEntryBody()); h.EntryID != 1 {
		t.Fatalf("lastEntryBody is entry %d, want 1", h.EntryID)
	}
	// A reader's maxLAC includes the explicit LAC.
	rr, err := c.Read(ctx(t), 4, 0)
	if err != nil || rr.GetMaxLAC() != 1 {
		t.Fatalf("maxLAC %d, %v", rr.GetMaxLAC(), err)
	}
}

func TestForceLedgerAndBookieInfo(t *testing.T) {
	e := newEnv(t, false)
	b := e.start()
	c := dial(t, b)
	addEntries(t, c, 9, 0, 5)
	if err := c.ForceLedger(ctx(t), 9); err != nil {
		t.Fatalf("force ledger: %v", err)
	}
	e.setUsage(0.25)
	total, free, err := c.BookieInfo(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	// Two ledger directories of 1 GiB, each a quarter used.
	if total != 2<<30 || free != 3*(2<<30)/4 {
		t.Fatalf("bookie info: total %d free %d", total, free)
	}
}

// rawConn is a connection that writes hand-made frames.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func rawDial(t *testing.T, b *Bookie) *rawConn {
	nc, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func (r *rawConn) writeFrame(payload []byte) {
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	if _, err := r.nc.Write(append(frame, payload...)); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawConn) writeRequest(req *bkproto.Request) {
	b, err := proto.Marshal(req)
	if err != nil {
		r.t.Fatal(err)
	}
	r.writeFrame(b)
}

func (r *rawConn) readResponse() (*bkproto.Response, error) {
	frame, err := bkproto.ReadFrame(r.r, nil, 0)
	if err != nil {
		return nil, err
	}
	return bkproto.DecodeResponse(frame)
}

func TestMalformedRequests(t *testing.T) {
	b := newEnv(t, false).start()
	good := dial(t, b)
	addEntries(t, good, 1, 0, 1)

	// A decodable request that is malformed for its operation gets its
	// status, and the connection goes on.
	r := rawDial(t, b)
	bad := &bkproto.Request{Header: &bkproto.BKPacketHeader{Version: bkproto.ProtocolVersion_VERSION_TWO.Enum(),
		Operation: bkproto.OperationType_READ_ENTRY.Enum(), TxnId: proto.Uint64(1)},
		ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(1), EntryId: proto.Int64(0)}}
	r.writeRequest(bad)
	resp, err := r.readResponse()
	if err != nil || resp.GetStatus() != bkproto.StatusCode_EBADVERSION || resp.GetHeader().GetTxnId() != 1 {
		t.Fatalf("version 2 header: %v %v", resp, err)
	}
	noBody := &bkproto.Request{Header: bkproto.NewHeader(bkproto.OperationType_ADD_ENTRY, 2),
		AddRequest: &bkproto.AddRequest{LedgerId: proto.Int64(1), EntryId: proto.Int64(1), MasterKey: testKey,
			Body: []byte("short")}}
	r.writeRequest(noBody)
	if resp, err := r.readResponse(); err != nil || resp.GetStatus() != bkproto.StatusCode_EBADREQ {
		t.Fatalf("add with a short body: %v %v", resp, err)
	}
	ok := &bkproto.Request{Header: bkproto.NewHeader(bkproto.OperationType_READ_ENTRY, 3),
		ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(1), EntryId: proto.Int64(0)}}
	r.writeRequest(ok)
	if resp, err := r.readResponse(); err != nil || bkproto.ResponseStatus(resp) != bkproto.StatusCode_EOK {
		t.Fatalf("read after malformed requests: %v %v", resp, err)
	}

	// Frames that are not a Request, or too large, close that connection
	// only.
	for name, frame := range map[string][]byte{
		"garbage":   []byte("\xff\xff\xff\xff not protobuf"),
		"no header": mustMarshal(t, &bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(1), EntryId: proto.Int64(0)}}),
	} {
		r := rawDial(t, b)
		r.writeFrame(frame)
		if _, err := r.readResponse(); err != io.EOF {
			t.Errorf("%s: connection not closed: %v", name, err)
		}
	}
	r = rawDial(t, b)
	if _, err := r.nc.Write(binary.BigEndian.AppendUint32(nil, bkproto.DefaultMaxFrameBytes+1)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.readResponse(); err != io.EOF {
		t.Errorf("oversized frame: connection not closed: %v", err)
	}
	checkEntry(t, good, 1, 0)
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	b, err := proto.MarshalOptions{AllowPartial: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUnsupportedOperations(t *testing.T) {
	b := newEnv(t, false).start()
	c := dial(t, b)
	resp, err := c.Call(ctx(t), &bkproto.Request{StartTLSRequest: &bkproto.StartTLSRequest{}})
	if err != nil || resp.GetStatus() != bkproto.StatusCode_EBADREQ {
		t.Fatalf("START_TLS: %v %v", resp, err)
	}
}

// TestRepeatedFenceJournalsOnce: recovery sends every read with the fence
// flag, so only the first fence of a ledger may cost a journal record
// (and an fsync); later ones read at once. The fence survives a crash.
func TestRepeatedFenceJournalsOnce(t *testing.T) {
	e := newEnv(t, false)
	b := e.start()
	c := dial(t, b)
	addEntries(t, c, 7, 0, 5)
	for entry := int64(bkproto.LastAddConfirmed); entry < 5; entry++ {
		if _, err := c.FenceRead(ctx(t), 7, entry, testKey); err != nil {
			t.Fatalf("fence read %d: %v", entry, err)
		}
	}
	// A fence with the wrong key is still refused on a fenced ledger.
	wrong := bkproto.MasterKey([]byte("other"))
	_, err := c.FenceRead(ctx(t), 7, 0, wrong[:])
	wantStatus(t, "repeated fence with a wrong master key", err, bkproto.StatusCode_EUA)

	fences := 0
	_, err = journal.Replay(e.fs, "/journal", journal.Position{}, journal.Config{}, func(r journal.Record) error {
		if r.Kind() == journal.KindFence && r.LedgerID() == 7 {
			fences++
		}
		return nil
	})
	if err != nil && !errors.Is(err, journal.ErrTorn) {
		t.Fatal(err)
	}
	if fences != 1 {
		t.Fatalf("journal holds %d fence records of ledger 7, want 1", fences)
	}

	b2 := e.crash().start()
	c2 := dial(t, b2)
	err = c2.Add(ctx(t), 7, 5, testKey, body(7, 5, 100), false)
	wantStatus(t, "add after restart of a fenced ledger", err, bkproto.StatusCode_EFENCED)
}
