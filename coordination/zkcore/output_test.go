package zkcore

import (
	"strings"
	"testing"

	"keeper/coordination/zkproto"
)

// written reports every byte recorded so far for id as written.
func (h *harness) written(id ConnID, n int) {
	h.s.Written(id, n, h.now)
	h.drive()
}

// replyBytes is the size of one getData reply frame for data of n bytes.
func replyBytes(n int) int { return 4 + 16 + 4 + n + 68 }

func TestOutputBudget(t *testing.T) {
	const nodeBytes = 1000
	tests := []struct {
		name          string
		connBudget    int
		allBudget     int
		conns         int
		reads         int
		wantPerConn   int // replies each connection gets before anything is written
		wantAfterRead int // replies each has once its first batch is written
	}{
		// The budget is checked before each request: the one that crosses
		// it still runs, the rest wait.
		{"connection budget", 3 * replyBytes(nodeBytes), 0, 1, 10, 3, 6},
		{"budget of one reply", 1, 0, 1, 5, 1, 2},
		{"no budget", 0, 0, 1, 10, 10, 10},
		// Over the budget of all connections, each still runs one request.
		{"all connections' budget", 0, 1, 3, 4, 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.MaxConnOutputBytes, c.MaxOutputBytes = tt.connBudget, tt.allBudget })
			h.open(1)
			h.send(1, zkproto.OpCreate, create("/n", strings.Repeat("x", nodeBytes), 0))
			for range 2 { // the handshake, then the create (which waits for it with a tiny budget)
				h.take(1)
				h.written(1, 1<<20)
			}
			for c := range tt.conns {
				id := ConnID(10 + c)
				h.open(id)
				h.take(id)
				h.written(id, 1<<20)
				for range tt.reads {
					h.send(id, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/n"})
				}
				h.drive()
			}
			held := 0
			for c := range tt.conns {
				id := ConnID(10 + c)
				got := h.take(id)
				if len(got) != tt.wantPerConn {
					t.Fatalf("conn %d: %d replies before the client read, want %d", id, len(got), tt.wantPerConn)
				}
				for _, f := range got {
					held += len(f.raw) + 4
				}
			}
			if got := h.s.HeldOutputBytes(); got != held {
				t.Errorf("held %d bytes, want %d (the replies not yet reported written)", got, held)
			}
			for c := range tt.conns {
				id := ConnID(10 + c)
				h.written(id, tt.wantPerConn*replyBytes(nodeBytes))
			}
			for c := range tt.conns {
				id := ConnID(10 + c)
				if got := len(h.take(id)); tt.wantPerConn+got != tt.wantAfterRead {
					t.Errorf("conn %d: %d replies after the first batch was written, want %d in all", id, tt.wantPerConn+got, tt.wantAfterRead)
				}
			}
		})
	}
}

// TestOutputBudgetReleasedOnClose: a closed connection's held output no
// longer counts against the others.
func TestOutputBudgetReleasedOnClose(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxConnOutputBytes, c.MaxOutputBytes = 0, 2000 })
	h.open(1)
	h.send(1, zkproto.OpCreate, create("/n", strings.Repeat("x", 1500), 0))
	h.drive()
	h.take(1)
	h.written(1, 1<<20)
	for range 3 {
		h.send(1, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/n"})
	}
	h.drive()
	if got := len(h.take(1)); got != 2 {
		t.Fatalf("%d replies before the client read, want 2", got)
	}
	h.s.Disconnect(1)
	if got := h.s.HeldOutputBytes(); got != 0 {
		t.Errorf("held %d bytes after the connection closed", got)
	}
}
