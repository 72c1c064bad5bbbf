package zkclient

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// pipeServer is the far end of a net.Pipe inside a synctest bubble: it
// accepts the handshake, answers pings and syncs, and records when each
// ping arrived, in virtual time since the handshake.
type pipeServer struct {
	start  time.Time // set before the handshake reply; read after it
	silent atomic.Bool

	mu    sync.Mutex
	pings []time.Duration // mu guards pings
}

// pingTimes returns a copy of the ping arrival times.
func (s *pipeServer) pingTimes() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pings)
}

func (s *pipeServer) serve(nc net.Conn, timeoutMs int32) {
	defer nc.Close()
	if _, err := zkproto.ReadFrame(nc, nil, 0); err != nil {
		return
	}
	s.start = time.Now()
	if err := acceptSession(nc, timeoutMs); err != nil {
		return
	}
	for {
		frame, err := zkproto.ReadFrame(nc, nil, 0)
		if err != nil {
			return
		}
		h, req, err := zkproto.DecodeRequest(frame, 0)
		if err != nil {
			return
		}
		if h.Op == zkproto.OpPing {
			s.mu.Lock()
			s.pings = append(s.pings, time.Since(s.start))
			s.mu.Unlock()
		}
		if s.silent.Load() {
			continue
		}
		var resp jute.Record
		if r, ok := req.(*zkproto.SyncRequest); ok {
			resp = &zkproto.SyncResponse{Path: r.Path}
		}
		if _, err := nc.Write(zkproto.AppendReplyFrame(nil, zkproto.ReplyHeader{Xid: h.Xid}, resp)); err != nil {
			return
		}
	}
}

// TestKeepAliveTiming checks, in virtual time, that an idle connection
// pings every T/3, that a busy one does not ping, and that a server which
// stops answering ends the connection 2T/3 after the last frame arrived.
func TestKeepAliveTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 3 * time.Second // ping every 1 s, read timeout 2 s
		cli, srv := net.Pipe()
		ps := &pipeServer{}
		go ps.serve(srv, int32(timeout.Milliseconds()))
		c, err := start(context.Background(), cli, "pipe", Options{}.withDefaults())
		if err != nil {
			t.Fatal(err)
		}

		time.Sleep(3500 * time.Millisecond) // idle: pings at 1, 2, 3 s
		synctest.Wait()
		want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
		if got := ps.pingTimes(); !slices.Equal(got, want) {
			t.Fatalf("idle pings at %v, want %v", got, want)
		}

		for range 6 { // busy from 3.5 s to 6.5 s: a request every 0.5 s, no pings
			if _, err := c.Sync(context.Background(), "/"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		synctest.Wait()
		if got := ps.pingTimes(); len(got) != 3 {
			t.Fatalf("pings while busy: %v", got)
		}

		// The last sync went out at 6 s and its reply came back at once.
		// The server goes silent: the client pings at 7 s (idle for 1 s)
		// and at 8 s, when it also finds nothing received for 2 s.
		ps.silent.Store(true)
		<-c.Done()
		if got := time.Since(ps.start); got < 8*time.Second || got > 8*time.Second+10*time.Millisecond {
			t.Fatalf("silent server noticed at %v, want 8 s (last reply at 6 s + 2 s)", got)
		}
		want = append(want, 7*time.Second, 8*time.Second)
		if got := ps.pingTimes(); !slices.Equal(got, want) || !errors.Is(c.Err(), ErrConnectionLoss) {
			t.Fatalf("pings %v, want %v; err %v", got, want, c.Err())
		}
		c.Close()
	})
}

// TestDialContextSeam checks that Options.DialContext opens the
// connection: the session is set up over what it returned, and its error
// fails the dial.
func TestDialContextSeam(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var asked []string
		ps := &pipeServer{}
		opts := Options{SessionTimeout: 3 * time.Second, DialContext: func(_ context.Context, network, addr string) (net.Conn, error) {
			asked = append(asked, network+" "+addr)
			cli, srv := net.Pipe()
			go ps.serve(srv, 3000)
			return cli, nil
		}}
		c, err := Dial(context.Background(), "10.1.2.3:2181", opts)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"tcp 10.1.2.3:2181"}; !slices.Equal(asked, want) {
			t.Fatalf("DialContext called with %q, want %q", asked, want)
		}
		if _, err := c.Sync(context.Background(), "/"); err != nil {
			t.Fatalf("sync over the seam's connection: %v", err)
		}
		c.Close()
		synctest.Wait()

		refused := errors.New("refused by the test")
		opts.DialContext = func(context.Context, string, string) (net.Conn, error) { return nil, refused }
		if _, err := Dial(context.Background(), "10.1.2.3:2181", opts); !errors.Is(err, refused) {
			t.Fatalf("dial through a failing DialContext: %v, want %v", err, refused)
		}
	})
}
