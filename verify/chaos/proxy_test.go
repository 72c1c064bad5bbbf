package chaos

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"keeper/internal/testhost"
)

// echoServer echoes every connection and counts them.
func echoServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String(), &accepted
}

func proxied(t *testing.T) (*Network, net.Conn, *atomic.Int64) {
	t.Helper()
	target, accepted := echoServer(t)
	n := NewNetwork(1)
	t.Cleanup(n.Close)
	p, err := n.Proxy("c1", "s1", target)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return n, c, accepted
}

// roundTrip writes msg and reads it back within timeout.
func roundTrip(c net.Conn, msg string, timeout time.Duration) error {
	if _, err := c.Write([]byte(msg)); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != msg {
		return errors.New("echoed " + string(buf))
	}
	return nil
}

func TestProxyForwards(t *testing.T) {
	_, c, _ := proxied(t)
	if err := roundTrip(c, "hello", 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestProxyLatency(t *testing.T) {
	n, c, _ := proxied(t)
	if err := roundTrip(c, "warm", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	n.SetBoth("c1", "s1", Rule{Latency: 150 * time.Millisecond})
	start := time.Now()
	if err := roundTrip(c, "slow", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("round trip took %v with 150 ms each way", d)
	}
}

func TestProxyBlackholeHoldsThenDelivers(t *testing.T) {
	n, c, _ := proxied(t)
	if err := roundTrip(c, "warm", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	n.Cut("c1", "s1")
	if err := roundTrip(c, "held", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("through a cut link: %v, want a timeout", err)
	}
	n.Heal()
	buf := make([]byte, 4)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "held" {
		t.Fatalf("after the heal: %q %v", buf, err)
	}
}

func TestProxyBlackholeHoldsNewConnections(t *testing.T) {
	target, accepted := echoServer(t)
	n := NewNetwork(1)
	defer n.Close()
	p, err := n.Proxy("c1", "s1", target)
	if err != nil {
		t.Fatal(err)
	}
	n.Partition([]string{"c1"}, []string{"s1"})
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c, "syn", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("through a partition: %v, want a timeout", err)
	}
	if accepted.Load() != 0 {
		t.Fatal("the target saw a connection through a partition")
	}
	n.Heal()
	buf := make([]byte, 3)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "syn" {
		t.Fatalf("after the heal: %q %v", buf, err)
	}
}

func TestProxyReset(t *testing.T) {
	n, c, _ := proxied(t)
	if err := roundTrip(c, "warm", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := n.Reset("s1", "c1"); got != 1 {
		t.Fatalf("reset %d connections, want 1", got)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after a reset: %v", err)
	}
}

func TestProxyTargetDown(t *testing.T) {
	dead := testhost.DeadAddr(t)
	n := NewNetwork(1)
	defer n.Close()
	p, err := n.Proxy("c1", "s1", dead)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		return // reset before the dial returned: the dead node shows as well
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read through a proxy to a dead node: %v, want EOF or reset", err)
	}
}
