package zkcore

import (
	"net/netip"
	"testing"

	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
)

// TestAwaits: a txn is awaited while the handshake or the write that made
// it waits on one of the server's connections, and not once it is applied,
// nor when another client's session made it.
func TestAwaits(t *testing.T) {
	h := newHarness(t)
	h.autoApply = false
	h.s.NewConn(1, netip.MustParseAddrPort("127.0.0.1:40000"), h.now)
	h.s.Connect(1, &zkproto.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16)}, h.now)
	h.drive()
	if len(h.pending) != 1 || h.pending[0].Header.Type != zkproto.OpCreateSession {
		t.Fatalf("pending after connect: %v", h.pending)
	}
	session := h.pending[0]
	if !h.s.Awaits(session) {
		t.Fatal("the handshake's createSession is not awaited")
	}
	h.applyN(1)
	if h.s.Awaits(session) {
		t.Fatal("an applied createSession is still awaited")
	}
	h.take(1)

	h.send(1, zkproto.OpCreate, create("/a", "x", 0))
	if len(h.pending) != 1 {
		t.Fatalf("pending after create: %v", h.pending)
	}
	write := h.pending[0]
	other := *write
	other.Header.ClientID = session.Header.ClientID + 1 // another server's client
	tests := []struct {
		name string
		t    *txn.Txn
		want bool
	}{
		{"own write", write, true},
		{"another session's txn", &other, false},
	}
	for _, tc := range tests {
		if got := h.s.Awaits(tc.t); got != tc.want {
			t.Errorf("%s: Awaits = %v, want %v", tc.name, got, tc.want)
		}
	}
	h.applyN(1)
	if h.s.Awaits(write) {
		t.Fatal("an applied write is still awaited")
	}
}
