package bookie

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"keeper/ledgerstore/bkproto"
)

// The tests in this file speak BookKeeper's v2 protocol to the bookie with
// packets built byte by byte from the layout of docs/bookkeeper-protocol.md
// §6.2, and compare the bookie's answers byte for byte: they use none of
// bkproto's v2 code.

func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func i64(v int64) []byte  { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
func join(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// v2 headers: version 2, an opcode, flags.
const (
	hdrAdd         = 0x02010000
	hdrRecoveryAdd = 0x02010006 // RECOVERY_ADD | HIGH_PRIORITY, as the Java client sends it
	hdrRead        = 0x02020000
	hdrFence       = 0x02020005 // DO_FENCING | HIGH_PRIORITY
	hdrAuth        = 0x02030000
)

// v2 return codes.
const (
	rcOK, rcNoLedger, rcNoEntry             = 0, 1, 2
	rcBadReq, rcIO, rcUA, rcBadVersion      = 100, 101, 102, 103
	rcFenced, rcReadOnly, rcTooManyRequests = 104, 105, 106
)

// authDisabled is the answer to AUTH of a bookie without an auth provider:
// an AuthMessage (field 1, the plugin name; field 2, an empty payload).
const (
	authDisabled        = "AuthDisabledPlugin"
	authDisabledMessage = "\x0a\x12" + authDisabled + "\x12\x00"
)

func v2Add(hdr uint32, key, entry []byte) []byte { return join(u32(hdr), key, entry) }
func v2Read(hdr uint32, ledger, entry int64, key []byte) []byte {
	return join(u32(hdr), i64(ledger), i64(entry), key)
}

// v2AddResp and v2ReadResp are the responses BookKeeper's bookie sends.
func v2AddResp(version byte, rc uint32, ledger, entry int64) []byte {
	return join(u32(uint32(version)<<24|0x010000), u32(rc), i64(ledger), i64(entry))
}
func v2ReadResp(rc uint32, ledger, entry int64, stored []byte) []byte {
	return join(u32(0x02020000), u32(rc), i64(ledger), i64(entry), stored)
}

func (r *rawConn) roundTrip(frame []byte) []byte {
	r.t.Helper()
	r.writeFrame(frame)
	got, err := bkproto.ReadFrame(r.r, nil, 0)
	if err != nil {
		r.t.Fatalf("no answer to % x: %v", frame, err)
	}
	return got
}

// wantClosed fails unless the bookie closes the connection.
func (r *rawConn) wantClosed(what string) {
	r.t.Helper()
	if got, err := bkproto.ReadFrame(r.r, nil, 0); err != io.EOF {
		r.t.Fatalf("%s: connection not closed: % x, %v", what, got, err)
	}
}

// TestV2Requests drives one v2 connection through the protocol's
// operations and the error codes the bookie answers them with, comparing
// every answer byte for byte with what BookKeeper's bookie sends.
func TestV2Requests(t *testing.T) {
	b := newEnv(t, false).start()
	r := rawDial(t, b)
	e0, e1, e2 := body(1, 0, 100), body(1, 1, 100), body(1, 2, 100)
	wrongKey := bytes.Repeat([]byte{7}, bkproto.MasterKeyBytes)
	steps := []struct {
		name string
		req  []byte
		want []byte
	}{
		{"add", v2Add(hdrAdd, testKey, e0), v2AddResp(2, rcOK, 1, 0)},
		{"add", v2Add(hdrAdd, testKey, e1), v2AddResp(2, rcOK, 1, 1)},
		{"read", v2Read(hdrRead, 1, 0, nil), v2ReadResp(rcOK, 1, 0, e0)},
		{"read of the last entry answers with entry id -1 and the entry", v2Read(hdrRead, 1, -1, nil),
			v2ReadResp(rcOK, 1, -1, e1)},
		{"read of an entry never added", v2Read(hdrRead, 1, 5, nil), v2ReadResp(rcNoEntry, 1, 5, nil)},
		{"read of a ledger never seen", v2Read(hdrRead, 9, 0, nil), v2ReadResp(rcNoLedger, 9, 0, nil)},
		{"add with another master key", v2Add(hdrAdd, wrongKey, e2), v2AddResp(2, rcUA, 1, 2)},
		{"add of an entry shorter than its header", v2Add(hdrAdd, testKey, join(i64(1), i64(2))),
			v2AddResp(2, rcBadReq, 1, 2)},
		{"version 3 v2 add", v2Add(0x03010000, testKey, e2), v2AddResp(3, rcBadVersion, 1, 2)},
		{"version 0 read", join(u32(2), i64(1), i64(0)), join(u32(2), u32(rcOK), i64(1), i64(0), e0)},
		{"version 1 fencing read carries no key", join(u32(0x01020001), i64(1), i64(-1)),
			join(u32(0x01020000), u32(rcUA), i64(1), i64(-1))},
		{"fencing read with another key", v2Read(hdrFence, 1, -1, wrongKey), v2ReadResp(rcUA, 1, -1, nil)},
		{"fencing read", v2Read(hdrFence, 1, -1, testKey), v2ReadResp(rcOK, 1, -1, e1)},
		{"add after the fence", v2Add(hdrAdd, testKey, e2), v2AddResp(2, rcFenced, 1, 2)},
		{"recovery add after the fence", v2Add(hdrRecoveryAdd, testKey, e2), v2AddResp(2, rcOK, 1, 2)},
		{"read of the recovered entry", v2Read(hdrRead, 1, 2, nil), v2ReadResp(rcOK, 1, 2, e2)},
		{"fencing read of an empty ledger", v2Read(hdrFence, 3, -1, testKey), v2ReadResp(rcNoEntry, 3, -1, nil)},
		{"auth is ignored and answered", join(u32(hdrAuth), []byte("\x0a\x04SASL\x12\x03abc")),
			join(u32(hdrAuth), []byte(authDisabledMessage))},
		{"auth of version 1 is answered at version 2", join(u32(0x01030000), []byte("\x0a\x01x\x12\x00")),
			join(u32(hdrAuth), []byte(authDisabledMessage))},
	}
	for _, s := range steps {
		if got := r.roundTrip(s.req); !bytes.Equal(got, s.want) {
			t.Fatalf("%s:\n got % x\nwant % x", s.name, got, s.want)
		}
	}
	// The entries went through the same storage as v3's: a v3 client reads
	// them, and the fence holds for it too.
	c := dial(t, b)
	checkEntry(t, c, 1, 0)
	checkEntry(t, c, 1, 2)
	wantStatus(t, "v3 add to the ledger fenced over v2", c.Add(ctx(t), 3, 0, testKey, body(3, 0, 100), false),
		bkproto.StatusCode_EFENCED)
}

// TestV2StorageErrors: the answers that depend on the bookie's state
// (read-only, a full write cache, a damaged entry) in their v2 codes.
func TestV2StorageErrors(t *testing.T) {
	e := newEnv(t, false)
	e.tweak = func(c *Config) {
		c.WriteCacheBytes = 1 << 10 // halves of 512 bytes: three 300-byte entries fill both
		c.ThrottleWait = 50 * time.Millisecond
	}
	b := e.start()
	r := rawDial(t, b)
	big := func(entry int64) []byte { return body(4, entry, 300) }
	// With the checkpoint held, the write cache cannot be flushed: the
	// third entry waits ThrottleWait and is refused.
	b.ckptMu.Lock()
	for entry := int64(0); entry < 2; entry++ {
		if got, want := r.roundTrip(v2Add(hdrAdd, testKey, big(entry))), v2AddResp(2, rcOK, 4, entry); !bytes.Equal(got, want) {
			b.ckptMu.Unlock()
			t.Fatalf("add %d: % x", entry, got)
		}
	}
	got := r.roundTrip(v2Add(hdrAdd, testKey, big(2)))
	b.ckptMu.Unlock()
	if want := v2AddResp(2, rcTooManyRequests, 4, 2); !bytes.Equal(got, want) {
		t.Fatalf("add to a full write cache:\n got % x\nwant % x", got, want)
	}

	// Read-only: adds are refused, recovery adds (high priority) still go.
	e.setUsage(0.97)
	if err := b.CheckDisks(); err != nil || !b.ReadOnly() {
		t.Fatalf("not read-only: %v", err)
	}
	if got, want := r.roundTrip(v2Add(hdrAdd, testKey, body(5, 0, 100))), v2AddResp(2, rcReadOnly, 5, 0); !bytes.Equal(got, want) {
		t.Fatalf("add while read-only:\n got % x\nwant % x", got, want)
	}
	if got, want := r.roundTrip(v2Add(hdrRecoveryAdd, testKey, body(5, 0, 100))), v2AddResp(2, rcOK, 5, 0); !bytes.Equal(got, want) {
		t.Fatalf("recovery add while read-only:\n got % x\nwant % x", got, want)
	}
	e.setUsage(0.1)
	if err := b.CheckDisks(); err != nil || b.ReadOnly() {
		t.Fatalf("still read-only: %v", err)
	}

	// A damaged entry is EIO, never "no such entry".
	addEntries(t, dial(t, b), 1, 0, 3)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	corruptPayload(t, e.fs, e.config().LedgerDirs, 1, 1)
	r = rawDial(t, e.start())
	if got, want := r.roundTrip(v2Read(hdrRead, 1, 1, nil)), v2ReadResp(rcIO, 1, 1, nil); !bytes.Equal(got, want) {
		t.Fatalf("read of a damaged entry:\n got % x\nwant % x", got, want)
	}
	if got, want := r.roundTrip(v2Read(hdrFence, 1, 1, testKey)), v2ReadResp(rcIO, 1, 1, nil); !bytes.Equal(got, want) {
		t.Fatalf("fencing read of a damaged entry:\n got % x\nwant % x", got, want)
	}
}

// TestV2ConnectionClosed: what BookKeeper's v2 decoder cannot decode closes
// that connection only, as it does there: packets too short for their
// operation, opcodes with no v2 layout (READ_LAC, WRITE_LAC,
// GET_BOOKIE_INFO: BookKeeper's client sends those over v3), and a v3
// frame once the connection speaks v2.
func TestV2ConnectionClosed(t *testing.T) {
	b := newEnv(t, false).start()
	good := dial(t, b)
	addEntries(t, good, 1, 0, 1)
	v3read, err := proto.Marshal(&bkproto.Request{Header: bkproto.NewHeader(bkproto.OperationType_READ_ENTRY, 1),
		ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(1), EntryId: proto.Int64(0)}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		frames [][]byte // all but the last are answered
	}{
		{"READ_LAC", [][]byte{join(u32(0x02040000), i64(1))}},
		{"WRITE_LAC", [][]byte{join(u32(0x02050000), i64(1), i64(0), testKey, bkproto.EncodeLAC(1, 0, bkproto.DigestCRC32C, nil))}},
		{"GET_BOOKIE_INFO", [][]byte{join(u32(0x02060000), i64(3))}},
		{"unknown opcode", [][]byte{join(u32(0x02090000), i64(1), i64(0))}},
		{"short read", [][]byte{join(u32(hdrRead), i64(1))}},
		{"fencing read without its key", [][]byte{join(u32(hdrFence), i64(1), i64(0), testKey[:10])}},
		{"add without its ids", [][]byte{join(u32(hdrAdd), testKey, i64(1))}},
		{"auth without a message", [][]byte{join(u32(hdrAuth), []byte{0xff})}},
		{"a v3 frame after v2", [][]byte{v2Read(hdrRead, 1, 0, nil), v3read}},
	}
	for _, tc := range cases {
		r := rawDial(t, b)
		for _, f := range tc.frames[:len(tc.frames)-1] {
			r.roundTrip(f)
		}
		r.writeFrame(tc.frames[len(tc.frames)-1])
		r.wantClosed(tc.name)
	}
	// A v3 connection stays v3 after a malformed v3 request.
	r := rawDial(t, b)
	r.writeFrame(v3read)
	if resp, err := r.readResponse(); err != nil || bkproto.ResponseStatus(resp) != bkproto.StatusCode_EOK {
		t.Fatalf("v3 read: %v %v", resp, err)
	}
	checkEntry(t, good, 1, 0)
}

// TestV3Auth: a v3 AUTH is answered as BookKeeper's bookie without an auth
// provider answers it: EOK, the disabled plugin, an empty payload.
func TestV3Auth(t *testing.T) {
	b := newEnv(t, false).start()
	c := dial(t, b)
	resp, err := c.Call(ctx(t), &bkproto.Request{AuthRequest: &bkproto.AuthMessage{AuthPluginName: proto.String("SASL"),
		Payload: []byte("hello")}})
	want := &bkproto.AuthMessage{AuthPluginName: proto.String(authDisabled), Payload: []byte{}}
	if err != nil || resp.GetStatus() != bkproto.StatusCode_EOK || !proto.Equal(resp.GetAuthResponse(), want) {
		t.Fatalf("AUTH: %v %v", resp, err)
	}
}

// TestV2BatchRead: BATCH_READ_ENTRY (BookKeeper 4.17) answers entries from
// the first one on, bounded by maxCount and by maxSize (counted from 36
// bytes, 4 more per entry, the first entry always in), stopping at the
// first entry it lacks; a batch whose first entry is missing gets that
// status; the fencing form fences.
func TestV2BatchRead(t *testing.T) {
	b := newEnv(t, false).start()
	r := rawDial(t, b)
	var ents [][]byte
	for e := range int64(4) {
		ents = append(ents, body(6, e, 100))
		r.roundTrip(v2Add(hdrAdd, testKey, ents[e]))
	}
	entSize := uint32(len(ents[0]))
	batch := func(hdr uint32, first, reqID int64, maxCount uint32, maxSize int64, key []byte) []byte {
		return join(u32(hdr), i64(6), i64(first), i64(reqID), u32(maxCount), i64(maxSize), key)
	}
	resp := func(rc uint32, first, reqID int64, entries ...[]byte) []byte {
		out := join(u32(0x02070000), u32(rc), i64(6), i64(first), i64(reqID))
		for _, e := range entries {
			out = join(out, u32(uint32(len(e))), e)
		}
		return out
	}
	fits := func(n int64) int64 { return 36 + n*(int64(entSize)+4) } // maxSize that just fits n entries
	steps := []struct {
		name string
		req  []byte
		want []byte
	}{
		{"two entries by count", batch(0x02070000, 1, 11, 2, 1<<20, nil), resp(rcOK, 1, 11, ents[1], ents[2])},
		{"no count bound: up to the last entry", batch(0x02070000, 0, 12, 0, 1<<20, nil),
			resp(rcOK, 0, 12, ents[0], ents[1], ents[2], ents[3])},
		{"size bound", batch(0x02070000, 0, 13, 10, fits(2), nil), resp(rcOK, 0, 13, ents[0], ents[1])},
		{"a byte short of two", batch(0x02070000, 0, 14, 10, fits(2)-1, nil), resp(rcOK, 0, 14, ents[0])},
		{"the first entry even over the size", batch(0x02070000, 2, 15, 10, 1, nil), resp(rcOK, 2, 15, ents[2])},
		{"first entry missing", batch(0x02070000, 4, 16, 10, 1<<20, nil), resp(rcNoEntry, 4, 16)},
		{"unknown ledger", join(u32(0x02070000), i64(60), i64(0), i64(17), u32(1), i64(1<<20)),
			join(u32(0x02070000), u32(rcNoLedger), i64(60), i64(0), i64(17))},
		{"fencing batch with another key", batch(0x02070005, 3, 18, 1, 1<<20, bytes.Repeat([]byte{1}, 20)),
			resp(rcUA, 3, 18)},
		{"fencing batch", batch(0x02070005, 3, 19, 5, 1<<20, testKey), resp(rcOK, 3, 19, ents[3])},
		{"add after the fencing batch", v2Add(hdrAdd, testKey, body(6, 4, 100)), v2AddResp(2, rcFenced, 6, 4)},
	}
	for _, s := range steps {
		if got := r.roundTrip(s.req); !bytes.Equal(got, s.want) {
			t.Fatalf("%s:\n got % x\nwant % x", s.name, got, s.want)
		}
	}
}
