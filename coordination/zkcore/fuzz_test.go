package zkcore

import (
	"encoding/binary"
	"testing"

	"keeper/coordination/zkproto"
)

// FuzzCore feeds arbitrary request frames from two connections to the core.
// Whatever the bytes, the core must not panic, must answer each
// connection's requests in the order they arrived, and must keep the tree
// digest consistent.
func FuzzCore(f *testing.F) {
	seed := func(conn byte, op zkproto.Op, body []byte) []byte {
		b := []byte{conn, 0, 0}
		frame := zkproto.EncodeRequest(zkproto.RequestHeader{Xid: 1, Op: op}, nil)
		frame = append(frame, body...)
		binary.BigEndian.PutUint16(b[1:], uint16(len(frame)))
		return append(b, frame...)
	}
	create := zkproto.EncodeRequest(zkproto.RequestHeader{}, &zkproto.CreateRequest{Path: "/a", ACL: zkproto.OpenACLUnsafe, Flags: 3})[8:]
	watch := zkproto.EncodeRequest(zkproto.RequestHeader{}, &zkproto.GetChildrenRequest{Path: "/", Watch: true})[8:]
	f.Add(append(seed(0, zkproto.OpCreate, create), seed(1, zkproto.OpGetChildren, watch)...))
	f.Add(append(seed(1, zkproto.OpCreate, create), seed(1, zkproto.OpCloseSession, nil)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		h := newHarness(t)
		h.open(1)
		h.open(2)
		sent := map[ConnID][]int32{}
		for len(data) >= 3 {
			id := ConnID(data[0]%2 + 1)
			n := int(binary.BigEndian.Uint16(data[1:3]))
			data = data[3:]
			if n > len(data) {
				n = len(data)
			}
			payload := data[:n]
			data = data[n:]
			if h.closed[id] {
				continue
			}
			r, err := DecodeRequest(payload, 1<<16)
			if err != nil || r.Header.Xid == zkproto.XidNotification {
				continue // xid -1 replies would look like notifications
			}
			h.s.Request(id, r, h.now)
			h.drive()
			sent[id] = append(sent[id], r.Header.Xid)
			h.now.MonoMs += 100
			h.now.WallMs += 100
		}
		for id, xids := range sent {
			var got []int32
			for _, fr := range h.frames[id] {
				if fr.hdr.Xid != zkproto.XidNotification {
					got = append(got, fr.hdr.Xid)
				}
			}
			if len(got) > len(xids) {
				t.Fatalf("conn %d: %d replies for %d requests", id, len(got), len(xids))
			}
			for i := range got {
				if got[i] != xids[i] {
					t.Fatalf("conn %d: reply %d has xid %d, want %d (sent %v, got %v)", id, i, got[i], xids[i], xids, got)
				}
			}
			if !h.closed[id] && len(got) != len(xids) {
				t.Fatalf("conn %d open but answered %d of %d requests", id, len(got), len(xids))
			}
		}
		if d, c := h.s.Tree().Digest(), h.s.Tree().ComputeDigest(); d != c {
			t.Fatalf("digest %d, recomputed %d", d, c)
		}
	})
}
