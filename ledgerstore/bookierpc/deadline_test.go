package bookierpc

import (
	"bufio"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/bkproto"
)

// silentAddBookie accepts one connection and answers every add whose entry id
// answer accepts with EOK and its ids, ignoring the others. It returns
// the listener's address and the accepted connection (once there is one).
func silentAddBookie(t *testing.T, answer func(entryID int64) bool) (string, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		accepted <- nc
		defer nc.Close()
		r := bufio.NewReader(nc)
		var out []byte
		for {
			frame, err := bkproto.ReadFrame(r, nil, bkproto.DefaultMaxFrameBytes)
			if err != nil {
				return
			}
			req, err := bkproto.DecodeRequest(frame)
			if err != nil {
				return
			}
			a := req.GetAddRequest()
			if !answer(a.GetEntryId()) {
				continue
			}
			ok := bkproto.StatusCode_EOK.Enum()
			resp := &bkproto.Response{Header: req.GetHeader(), Status: ok,
				AddResponse: &bkproto.AddResponse{Status: ok, LedgerId: a.LedgerId, EntryId: a.EntryId}}
			if out, err = bkproto.AppendFrame(out[:0], resp); err != nil {
				return
			}
			if _, err := nc.Write(out); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String(), accepted
}

// results collects Send's callbacks, one per entry id.
type results struct {
	mu   sync.Mutex
	got  map[int64][]Result
	when map[int64]time.Time
	all  chan struct{} // closed once want results arrived
	want int
}

func newResults(want int) *results {
	return &results{got: map[int64][]Result{}, when: map[int64]time.Time{}, all: make(chan struct{}), want: want}
}

func (r *results) callback(entryID int64) func(Result) {
	return func(res Result) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got[entryID] = append(r.got[entryID], res)
		r.when[entryID] = time.Now()
		if r.want--; r.want == 0 {
			close(r.all)
		}
	}
}

func (r *results) wait(t *testing.T) {
	t.Helper()
	select {
	case <-r.all:
	case <-time.After(testhost.Scale(30 * time.Second)):
		t.Fatal("callbacks missing")
	}
}

// TestSendAnswersAndTimesOut: Send delivers each answer to its own
// callback, and a call left unanswered gets ErrTimeout once its deadline
// passes, not before, even when calls with later deadlines were sent
// before it; every callback runs exactly once.
func TestSendAnswersAndTimesOut(t *testing.T) {
	addr, _ := silentAddBookie(t, func(e int64) bool { return e%2 == 0 })
	c, err := Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 200
	far := time.Now().Add(time.Hour)
	short := 50 * time.Millisecond
	r := newResults(n)
	sent := make(map[int64]time.Time)
	for e := range int64(n) {
		deadline := far // answered: the deadline must not matter
		if e%2 == 1 {
			deadline = time.Now().Add(short)
		}
		sent[e] = deadline
		body := bkproto.EncodeEntry(1, e, e-1, 0, bkproto.DigestCRC32C, nil, []byte("x"))
		c.Send(AddRequest(1, e, make([]byte, 20), body, false), deadline, r.callback(e))
	}
	r.wait(t)
	r.mu.Lock()
	defer r.mu.Unlock()
	for e := range int64(n) {
		got := r.got[e]
		if len(got) != 1 {
			t.Fatalf("entry %d: %d callbacks", e, len(got))
		}
		switch {
		case e%2 == 0 && (got[0].Err != nil || got[0].Resp.GetAddResponse().GetEntryId() != e):
			t.Errorf("entry %d: %v, %v", e, got[0].Resp, got[0].Err)
		case e%2 == 1 && !errors.Is(got[0].Err, ErrTimeout):
			t.Errorf("entry %d: %v, want ErrTimeout", e, got[0].Err)
		case e%2 == 1 && r.when[e].Before(sent[e]):
			t.Errorf("entry %d timed out %v before its deadline", e, sent[e].Sub(r.when[e]))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) != 0 {
		t.Errorf("%d calls still pending", len(c.pending))
	}
}

// TestSendOnBrokenConnection: calls outstanding when the connection
// breaks get its error, and a Send after that gets it at once.
func TestSendOnBrokenConnection(t *testing.T) {
	addr, accepted := silentAddBookie(t, func(int64) bool { return false })
	c, err := Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := newResults(3)
	far := time.Now().Add(time.Hour)
	for e := range int64(2) {
		c.Send(AddRequest(1, e, make([]byte, 20), bkproto.EncodeEntry(1, e, e-1, 0, bkproto.DigestCRC32C, nil, nil), false),
			far, r.callback(e))
	}
	(<-accepted).Close()
	<-c.Done()
	c.Send(AddRequest(1, 2, make([]byte, 20), bkproto.EncodeEntry(1, 2, 1, 0, bkproto.DigestCRC32C, nil, nil), false),
		far, r.callback(2))
	r.wait(t)
	r.mu.Lock()
	defer r.mu.Unlock()
	for e, got := range r.got {
		if len(got) != 1 || !errors.Is(got[0].Err, ErrClientClosed) {
			t.Errorf("entry %d: %v, want one ErrClientClosed", e, got)
		}
	}
}

// TestDeadlineQueue checks the heap's order and that deadlines of
// answered calls do not pile up.
func TestDeadlineQueue(t *testing.T) {
	c := &Client{pending: map[uint64]pendingCall{}}
	defer func() {
		c.mu.Lock()
		c.deadlines.stop()
		c.mu.Unlock()
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Now().Add(time.Hour) // the timer never fires during the test
	c.mu.Lock()
	for txn := range uint64(500) {
		c.pending[txn] = pendingCall{}
		c.deadlines.push(c, txn, base.Add(time.Duration(rng.IntN(1000))*time.Millisecond))
	}
	var last time.Time
	for i := 0; ; i++ {
		e, ok := c.deadlines.popDue(base.Add(time.Hour))
		if !ok {
			if i != 500 {
				t.Fatalf("popped %d deadlines, want 500", i)
			}
			break
		}
		if e.at.Before(last) {
			t.Fatalf("deadline %v popped after %v", e.at, last)
		}
		last = e.at
	}
	clear(c.pending)
	for txn := range uint64(20_000) { // each answered at once: its deadline goes stale
		c.deadlines.push(c, txn, base)
		if n := len(c.deadlines.h); n > 2*len(c.pending)+maxStaleDeadlines+1 {
			t.Fatalf("%d deadlines held for %d pending calls", n, len(c.pending))
		}
	}
	c.mu.Unlock()
}
