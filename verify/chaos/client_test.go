package chaos

import (
	"bufio"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// fakeServer accepts one connection and runs serve on it.
func fakeServer(t *testing.T, serve func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		if _, err := zkproto.ReadFrame(br, nil, 0); err != nil { // the ConnectRequest
			return
		}
		serve(c, br)
	}()
	return ln.Addr().String()
}

func connectReply(timeoutMs int32) []byte {
	return zkproto.AppendFrame(nil, jute.Marshal(&zkproto.ConnectResponse{TimeoutMs: timeoutMs, SessionID: 7,
		Passwd: make([]byte, zkproto.PasswdLen), HasReadOnly: true}))
}

func TestDialOutcomes(t *testing.T) {
	cases := []struct {
		name  string
		serve func(c net.Conn, br *bufio.Reader)
		want  error
	}{
		{"closed without a reply", func(net.Conn, *bufio.Reader) {}, ErrRefused},
		{"session expired", func(c net.Conn, _ *bufio.Reader) { _, _ = c.Write(connectReply(0)) }, zkproto.ErrSessionExpired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := fakeServer(t, tc.serve)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := Dial(ctx, addr, DialOptions{Timeout: time.Second, Session: Session{ID: 7}})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Dial: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestConnRepliesAndEvents(t *testing.T) {
	addr := fakeServer(t, func(c net.Conn, br *bufio.Reader) {
		_, _ = c.Write(connectReply(3000))
		frame, err := zkproto.ReadFrame(br, nil, 0)
		if err != nil {
			return
		}
		h, _, _ := zkproto.DecodeRequest(frame, 0)
		ev := zkproto.AppendReplyFrame(nil, zkproto.ReplyHeader{Xid: zkproto.XidNotification, Zxid: -1},
			&zkproto.WatcherEvent{Type: zkproto.EventNodeDataChanged, State: 3, Path: "/k"})
		reply := zkproto.AppendReplyFrame(nil, zkproto.ReplyHeader{Xid: h.Xid, Zxid: 42},
			&zkproto.GetDataResponse{Data: []byte("v"), Stat: zkproto.Stat{Version: 3}})
		_, _ = c.Write(append(ev, reply...))
		_, _ = zkproto.ReadFrame(br, nil, 0) // wait for the client to go
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, DialOptions{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Drop()
	r, err := c.Do(ctx, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/k"})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Record.(*zkproto.GetDataResponse)
	if r.Xid != 1 || r.Header.Zxid != 42 || string(got.Data) != "v" || got.Stat.Version != 3 || c.LastZxid() != 42 {
		t.Fatalf("reply %+v %+v, last zxid %d", r, got, c.LastZxid())
	}
	select {
	case ev := <-c.Events():
		if ev.Path != "/k" || ev.Seq != r.Seq-1 {
			t.Fatalf("event %+v, reply seq %d", ev, r.Seq)
		}
	default:
		t.Fatal("the event sent before the reply was not delivered")
	}
}

func TestConnTimeoutMakesOutcomeUnknown(t *testing.T) {
	addr := fakeServer(t, func(c net.Conn, br *bufio.Reader) {
		_, _ = c.Write(connectReply(3000))
		for {
			if _, err := zkproto.ReadFrame(br, nil, 0); err != nil {
				return
			}
		}
	})
	c, err := Dial(context.Background(), addr, DialOptions{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Do(ctx, zkproto.OpSync, &zkproto.SyncRequest{Path: "/"}); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Do: %v, want a timeout", err)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the connection stayed up after a request timed out")
	}
}
