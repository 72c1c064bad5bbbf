package memnet

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// pair dials a fresh listener of n and accepts: the client and server ends.
func pair(t *testing.T, n *Network) (client, server net.Conn, ln net.Listener) {
	t.Helper()
	ln, err := n.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	client, err = n.Dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return client, server, ln
}

func TestListenAddresses(t *testing.T) {
	n := New()
	for _, tc := range []struct {
		address string
		want    string // the listener's address; "" when Listen fails
		errIs   error
	}{
		{address: "127.0.0.1:2181", want: "127.0.0.1:2181"},
		{address: "127.0.0.1:2181", errIs: syscall.EADDRINUSE},
		{address: "localhost:2182", want: "127.0.0.1:2182"},
		{address: ":2183", want: "127.0.0.1:2183"},
		{address: "127.0.0.1:0", want: "127.0.0.1:40000"},
		{address: "127.0.0.1:0", want: "127.0.0.1:40001"},
		{address: "10.0.0.7:2181", want: "10.0.0.7:2181"},
		{address: "example.com:2181"},
		{address: "127.0.0.1"},
		{address: "127.0.0.1:70000"},
	} {
		ln, err := n.Listen("tcp", tc.address)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("Listen(%q) = %v, want an error", tc.address, ln.Addr())
		case tc.want == "" && tc.errIs != nil && !errors.Is(err, tc.errIs):
			t.Errorf("Listen(%q): %v, want %v", tc.address, err, tc.errIs)
		case tc.want != "" && err != nil:
			t.Errorf("Listen(%q): %v", tc.address, err)
		case tc.want != "":
			if _, ok := ln.Addr().(*net.TCPAddr); !ok || ln.Addr().String() != tc.want {
				t.Errorf("Listen(%q) listens on %#v, want %s", tc.address, ln.Addr(), tc.want)
			}
		}
	}
	if _, err := n.Listen("udp", "127.0.0.1:0"); err == nil {
		t.Error("Listen on udp succeeded")
	}
}

func TestDialAndTransfer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		client, server, ln := pair(t, n)
		if client.RemoteAddr().String() != ln.Addr().String() || server.LocalAddr().String() != ln.Addr().String() {
			t.Errorf("addresses: client remote %v, server local %v, listener %v", client.RemoteAddr(), server.LocalAddr(), ln.Addr())
		}
		if client.LocalAddr().String() != server.RemoteAddr().String() {
			t.Errorf("client local %v, server sees %v", client.LocalAddr(), server.RemoteAddr())
		}
		go func() {
			client.Write([]byte("ping"))
		}()
		buf := make([]byte, 4)
		if _, err := io.ReadFull(server, buf); err != nil || string(buf) != "ping" {
			t.Fatalf("server read %q, %v", buf, err)
		}
		client.Close()
		server.Close()
		ln.Close()
	})
}

func TestCloseSemantics(t *testing.T) {
	for _, tc := range []struct {
		name string
		act  func(t *testing.T, n *Network, client, server net.Conn, ln net.Listener) error
		want error
	}{
		{"read after the peer closed", func(t *testing.T, _ *Network, client, server net.Conn, _ net.Listener) error {
			server.Close()
			_, err := client.Read(make([]byte, 1))
			return err
		}, io.EOF},
		{"write after the peer closed", func(t *testing.T, _ *Network, client, server net.Conn, _ net.Listener) error {
			server.Close()
			_, err := client.Write([]byte("x"))
			return err
		}, io.ErrClosedPipe},
		{"accept after close", func(t *testing.T, _ *Network, _, _ net.Conn, ln net.Listener) error {
			ln.Close()
			_, err := ln.Accept()
			return err
		}, net.ErrClosed},
		{"accept waiting when the listener closes", func(t *testing.T, _ *Network, _, _ net.Conn, ln net.Listener) error {
			errc := make(chan error, 1)
			go func() { _, err := ln.Accept(); errc <- err }()
			synctest.Wait()
			ln.Close()
			return <-errc
		}, net.ErrClosed},
		{"second close of a listener", func(t *testing.T, _ *Network, _, _ net.Conn, ln net.Listener) error {
			ln.Close()
			return ln.Close()
		}, net.ErrClosed},
		{"second close of a connection", func(t *testing.T, _ *Network, client, _ net.Conn, _ net.Listener) error {
			client.Close()
			return client.Close()
		}, net.ErrClosed},
		{"dial after the listener closed", func(t *testing.T, n *Network, _, _ net.Conn, ln net.Listener) error {
			ln.Close()
			_, err := n.Dial(context.Background(), "tcp", ln.Addr().String())
			return err
		}, syscall.ECONNREFUSED},
		{"dial where nothing listens", func(t *testing.T, n *Network, _, _ net.Conn, _ net.Listener) error {
			_, err := n.Dial(context.Background(), "tcp", "127.0.0.1:1")
			return err
		}, syscall.ECONNREFUSED},
		{"read past the deadline", func(t *testing.T, _ *Network, client, _ net.Conn, _ net.Listener) error {
			client.SetReadDeadline(time.Now().Add(time.Second))
			start := time.Now()
			_, err := client.Read(make([]byte, 1))
			if waited := time.Since(start); waited != time.Second {
				t.Errorf("the read waited %v, want the deadline's 1s", waited)
			}
			return err
		}, os.ErrDeadlineExceeded},
		{"a crash closes the accepted connections", func(t *testing.T, n *Network, client, _ net.Conn, ln net.Listener) error {
			if !n.Crash(ln.Addr().String()) {
				t.Error("Crash found no listener")
			}
			_, err := client.Read(make([]byte, 1))
			return err
		}, io.EOF},
		{"a crash frees the address", func(t *testing.T, n *Network, _, _ net.Conn, ln net.Listener) error {
			n.Crash(ln.Addr().String())
			again, err := n.Listen("tcp", ln.Addr().String())
			if err == nil {
				again.Close()
			}
			return err
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := New()
				client, server, ln := pair(t, n)
				err := tc.act(t, n, client, server, ln)
				if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
					t.Errorf("got %v, want %v", err, tc.want)
				}
				client.Close()
				server.Close()
				ln.Close()
			})
		})
	}
}

// TestDialQueuedThenClosed checks that a connection dialled and never
// accepted is closed with its listener: the dialer reads io.EOF.
func TestDialQueuedThenClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		ln, _ := n.Listen("tcp", "127.0.0.1:0")
		c, err := n.Dial(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		ln.Close()
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("read from a connection never accepted: %v, want EOF", err)
		}
		c.Close()
	})
}

// TestDialWaitsForBacklog checks that a dial beyond the backlog waits for
// an Accept, and gives up with its context.
func TestDialWaitsForBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		ln, _ := n.Listen("tcp", "127.0.0.1:0")
		var conns []net.Conn
		for range backlogConns {
			c, err := n.Dial(context.Background(), "tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := n.Dial(ctx, "tcp", ln.Addr().String()); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("dial beyond the backlog: %v, want the context's deadline", err)
		}
		done := make(chan net.Conn)
		go func() {
			c, err := n.Dial(context.Background(), "tcp", ln.Addr().String())
			if err != nil {
				t.Error(err)
			}
			done <- c
		}()
		synctest.Wait()
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, <-done, s)
		ln.Close()
		for _, c := range conns {
			c.Close()
		}
	})
}

// TestHostCrash checks that a host's crash takes down what it listens on,
// what it accepted and what it dialled, and nothing of another host's.
func TestHostCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := New()
		a, b := n.Host(), n.Host()
		lnA, err := a.Listen("tcp", "127.0.0.1:2181")
		if err != nil {
			t.Fatal(err)
		}
		lnB, _ := b.Listen("tcp", "127.0.0.1:2182")
		toA, err := b.Dial(context.Background(), "tcp", "127.0.0.1:2181") // accepted by a
		if err != nil {
			t.Fatal(err)
		}
		acceptedByA, _ := lnA.Accept()
		fromA, err := a.Dial(context.Background(), "tcp", "127.0.0.1:2182") // dialled by a
		if err != nil {
			t.Fatal(err)
		}
		acceptedByB, _ := lnB.Accept()
		bToB, _ := b.Dial(context.Background(), "tcp", "127.0.0.1:2182") // b's own, untouched
		bAccepted, _ := lnB.Accept()

		a.Crash()
		for name, c := range map[string]net.Conn{"b's end of its dial to a": toA, "b's end of a's dial": acceptedByB} {
			if _, err := c.Read(make([]byte, 1)); err != io.EOF {
				t.Errorf("%s: read %v, want EOF", name, err)
			}
		}
		for name, c := range map[string]net.Conn{"a's accepted end": acceptedByA, "a's dialled end": fromA} {
			if _, err := c.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
				t.Errorf("%s: write after the crash: %v, want io.ErrClosedPipe", name, err)
			}
		}
		if _, err := n.Dial(context.Background(), "tcp", "127.0.0.1:2181"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial to the crashed host: %v, want ECONNREFUSED", err)
		}
		if _, err := a.Dial(context.Background(), "tcp", "127.0.0.1:2182"); err == nil {
			t.Error("the crashed host dialled")
		}
		if _, err := a.Listen("tcp", "127.0.0.1:2183"); err == nil {
			t.Error("the crashed host listened")
		}
		go bToB.Write([]byte("y"))
		if _, err := io.ReadFull(bAccepted, make([]byte, 1)); err != nil {
			t.Errorf("b's own connection after a's crash: %v", err)
		}
		for _, c := range []net.Conn{toA, acceptedByB, bToB, bAccepted} {
			c.Close()
		}
		lnB.Close()
	})
}
