package zkcore

import (
	"net/netip"
	"testing"

	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
)

// harness drives a Server with no sockets: frames it sends are decoded and
// kept per connection, and proposals are applied when the test says so
// (or at once with autoApply).
type harness struct {
	t         *testing.T
	s         *Server
	now       Now
	autoApply bool
	pending   []*txn.Txn
	frames    map[ConnID][]frame
	closed    map[ConnID]bool
	xid       map[ConnID]int32
	forwards  []Forward    // a learner's writes for the leader
	syncReqs  int          // syncs a learner passed on
	revals    []Revalidate // a learner's questions for the leader
}

// frame is one decoded frame sent to a connection.
type frame struct {
	hdr  zkproto.ReplyHeader
	body []byte
	raw  []byte
}

func newHarness(t *testing.T, mutate ...func(*Config)) *harness {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ExtendedTypes = true
	cfg.StartWallMs = 1_700_000_000_000
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{
		t: t, s: s, autoApply: true,
		now:    Now{WallMs: cfg.StartWallMs, MonoMs: 1000},
		frames: make(map[ConnID][]frame), closed: make(map[ConnID]bool), xid: make(map[ConnID]int32),
	}
}

// drive carries out Ready batches: sends are recorded, proposals queued
// and, with autoApply, applied in order.
func (h *harness) drive() {
	for h.s.HasReady() || (h.autoApply && len(h.pending) > 0) {
		rd := h.s.Ready()
		for _, snd := range rd.Sends {
			h.record(snd)
		}
		h.pending = append(h.pending, rd.Proposals...)
		for _, o := range rd.Outbox {
			switch {
			case o.Txn != nil:
				h.pending = append(h.pending, o.Txn)
			case o.Forward != nil:
				h.forwards = append(h.forwards, *o.Forward)
			case o.Sync:
				h.syncReqs++
			case o.Revalidate != nil:
				h.revals = append(h.revals, *o.Revalidate)
			}
		}
		if h.autoApply {
			h.applyN(len(h.pending))
		}
	}
}

// applyN applies the first n pending proposals, then drives.
func (h *harness) applyN(n int) {
	batch := h.pending[:n]
	h.pending = h.pending[n:]
	for _, t := range batch {
		h.s.Apply(t, h.now)
	}
	if !h.autoApply {
		h.drive()
	}
}

func (h *harness) record(snd Send) {
	b := snd.Data
	for len(b) > 0 {
		n := int(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
		payload := b[4 : 4+n]
		b = b[4+n:]
		f := frame{raw: payload}
		if len(payload) >= 16 {
			d := jute.NewDecoder(payload, 0)
			f.hdr.Xid = d.Int()
			f.hdr.Zxid = d.Long()
			f.hdr.Err = zkproto.Code(d.Int())
			f.body = payload[16:]
		}
		h.frames[snd.Conn] = append(h.frames[snd.Conn], f)
	}
	if snd.Close {
		h.closed[snd.Conn] = true
	}
}

// open makes a connection with a new session and returns its session id.
func (h *harness) open(id ConnID) int64 {
	h.t.Helper()
	h.s.NewConn(id, netip.MustParseAddrPort("127.0.0.1:40000"), h.now)
	h.s.Connect(id, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16), HasReadOnly: true}, h.now)
	h.drive()
	fs := h.take(id)
	if len(fs) != 1 {
		h.t.Fatalf("conn %d: %d frames after connect, want 1", id, len(fs))
	}
	var resp zkproto.ConnectResponse
	d := jute.NewDecoder(fs[0].raw, 0)
	resp.Decode(d)
	if resp.SessionID == 0 {
		h.t.Fatalf("conn %d: session refused", id)
	}
	return resp.SessionID
}

// send queues one request and drives; it returns the xid used.
func (h *harness) send(id ConnID, op zkproto.Op, body jute.Record) int32 {
	h.xid[id]++
	x := h.xid[id]
	h.s.Request(id, Request{Header: zkproto.RequestHeader{Xid: x, Op: op}, Body: body}, h.now)
	h.drive()
	return x
}

// take returns and forgets the frames sent to id so far.
func (h *harness) take(id ConnID) []frame {
	fs := h.frames[id]
	delete(h.frames, id)
	return fs
}

// decode reads a reply body into r.
func (h *harness) decode(f frame, r jute.Record) {
	h.t.Helper()
	d := jute.NewDecoder(f.body, 0)
	r.Decode(d)
	if d.Err() != nil {
		h.t.Fatalf("decode %T: %v", r, d.Err())
	}
}

func (h *harness) expect(id ConnID, want ...zkproto.ReplyHeader) []frame {
	h.t.Helper()
	fs := h.take(id)
	if len(fs) != len(want) {
		h.t.Fatalf("conn %d: got %d frames %+v, want %d %+v", id, len(fs), headers(fs), len(want), want)
	}
	for i, w := range want {
		got := fs[i].hdr
		if got.Xid != w.Xid || got.Err != w.Err || (w.Zxid != 0 && got.Zxid != w.Zxid) {
			h.t.Fatalf("conn %d frame %d: got %+v, want %+v (all: %+v)", id, i, got, w, headers(fs))
		}
	}
	return fs
}

func headers(fs []frame) []zkproto.ReplyHeader {
	out := make([]zkproto.ReplyHeader, len(fs))
	for i, f := range fs {
		out[i] = f.hdr
	}
	return out
}

func create(path string, data string, flags int32) *zkproto.CreateRequest {
	return &zkproto.CreateRequest{Path: path, Data: []byte(data), ACL: zkproto.OpenACLUnsafe, Flags: flags}
}
