package bookierpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"keeper/ledgerstore/bkproto"
)

// TestStalledBookie: a bookie that accepts a connection and never reads
// fills the socket buffers; the client must give up on the connection
// after its write timeout instead of blocking its callers for ever, and
// every call must get an error.
func TestStalledBookie(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, err := ln.Accept()
		if err == nil {
			accepted <- nc
		}
	}()
	c, err := Dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.writeTimeout = 200 * time.Millisecond
	defer func() {
		if nc := <-accepted; nc != nil {
			nc.Close()
		}
	}()

	body := make([]byte, 1<<20)
	var calls []<-chan Result
	for i := range 64 { // 64 MiB: more than loopback buffers hold
		calls = append(calls, c.Go(AddRequest(1, int64(i), make([]byte, 20), body, false)))
		if c.Err() != nil {
			break
		}
	}
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("connection to a stalled bookie still open")
	}
	if !errors.Is(c.Err(), ErrClientClosed) {
		t.Fatalf("Err() = %v, want ErrClientClosed", c.Err())
	}
	for i, ch := range calls {
		if res := <-ch; res.Err == nil {
			t.Fatalf("call %d succeeded against a bookie that reads nothing", i)
		}
	}
	if _, err := c.Call(context.Background(), &bkproto.Request{ReadRequest: &bkproto.ReadRequest{}}); err == nil {
		t.Fatal("call on a closed connection succeeded")
	}
}

// TestAbandonedCallForgotten: a call whose context ends leaves no entry
// behind in the pending table.
func TestAbandonedCallForgotten(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		nc, err := ln.Accept()
		if err == nil {
			defer nc.Close()
			buf := make([]byte, 4096)
			for {
				if _, err := nc.Read(buf); err != nil {
					return
				}
			}
		}
	}()
	c, err := Dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Read(ctx, 1, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read from a silent bookie: %v", err)
	}
	c.mu.Lock()
	n := len(c.pending)
	c.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d calls still pending after their caller gave up", n)
	}
}

// TestConcurrentSendsKeepFramesWhole: many callers sending at once share
// socket writes (flushQueued); the bookie must still read every frame
// whole and in one piece, and every caller get the answer to its own
// request.
func TestConcurrentSendsKeepFramesWhole(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// An echoing bookie: every add answered EOK with its ids. It reports
	// a frame it cannot decode on bookieErr, read once the test is done
	// with it, so that nothing logs after the test ends.
	bookieErr := make(chan error, 1)
	go func() {
		bookieErr <- func() error {
			nc, err := ln.Accept()
			if err != nil {
				return nil
			}
			defer nc.Close()
			r := bufio.NewReader(nc)
			var out []byte
			for {
				frame, err := bkproto.ReadFrame(r, nil, bkproto.DefaultMaxFrameBytes)
				if err != nil {
					return nil // the client hung up
				}
				req, err := bkproto.DecodeRequest(frame)
				if err != nil {
					return fmt.Errorf("bookie: %w", err) // the calls fail too, for this reason
				}
				a := req.GetAddRequest()
				ok := bkproto.StatusCode_EOK.Enum()
				resp := &bkproto.Response{Header: req.GetHeader(), Status: ok,
					AddResponse: &bkproto.AddResponse{Status: ok, LedgerId: a.LedgerId, EntryId: a.EntryId}}
				if out, err = bkproto.AppendFrame(out[:0], resp); err != nil {
					return err
				}
				if _, err := nc.Write(out); err != nil {
					return nil
				}
			}
		}()
	}()
	c, err := Dial(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const senders, each = 16, 200
	errs := make(chan error, senders)
	for s := range senders {
		go func() {
			for e := range int64(each) {
				body := bkproto.EncodeEntry(int64(s), e, e-1, 0, bkproto.DigestCRC32C, nil,
					make([]byte, 100+s*37)) // frames of different lengths
				resp, err := c.Call(context.Background(), AddRequest(int64(s), e, make([]byte, 20), body, false))
				if err == nil && (resp.GetAddResponse().GetLedgerId() != int64(s) || resp.GetAddResponse().GetEntryId() != e) {
					err = fmt.Errorf("sender %d entry %d: answered for %d/%d", s, e,
						resp.GetAddResponse().GetLedgerId(), resp.GetAddResponse().GetEntryId())
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var failed error
	for range senders {
		if err := <-errs; err != nil && failed == nil {
			failed = err
		}
	}
	c.Close()
	if err := <-bookieErr; err != nil {
		t.Fatal(err)
	}
	if failed != nil {
		t.Fatal(failed)
	}
}
