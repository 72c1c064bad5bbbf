package cutproxy

import (
	"bufio"
	"net"
	"testing"
	"time"

	"keeper/internal/testhost"
)

// echo serves a line echo on a loopback port until the test ends.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip writes a line on c and reads it back.
func roundTrip(c net.Conn, line string) (string, error) {
	c.SetDeadline(time.Now().Add(testhost.Scale(10 * time.Second)))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	return got[:len(got)-1], nil
}

func TestCutDropsAndHoldsUntilRestore(t *testing.T) {
	p := New(t, echo(t))
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(c, "one"); got != "one" || err != nil {
		t.Fatalf("before the cut: %q, %v", got, err)
	}

	p.Cut()
	if got, err := roundTrip(c, "two"); err == nil {
		t.Fatalf("a forwarded connection answered %q after the cut", got)
	}
	held, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	// A connection made while cut is accepted but not answered.
	held.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := held.Write([]byte("three\n")); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if n, err := held.Read(b[:]); n != 0 || !isTimeout(err) {
		t.Fatalf("a connection made while cut read %d bytes, %v", n, err)
	}
	if p.Accepts() != 2 {
		t.Errorf("Accepts = %d, want 2", p.Accepts())
	}

	// After Restore the held connection reaches the server, with what it sent
	// while it was held.
	p.Restore()
	held.SetDeadline(time.Now().Add(testhost.Scale(10 * time.Second)))
	got, err := bufio.NewReader(held).ReadString('\n')
	if got != "three\n" || err != nil {
		t.Fatalf("the held connection after Restore: %q, %v", got, err)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
