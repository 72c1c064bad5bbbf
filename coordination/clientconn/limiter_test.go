package clientconn

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// TestLimiterLetsAConnectionGoOnOnceItsOwnRequestsAreAnswered: a
// connection waiting with a request of its own in flight, while other
// connections hold the server over its limit, goes on as soon as its own
// request is answered, although the server is still over the limit. (The
// count of its own requests was once taken before the wait, so such a
// connection waited for the clients holding the limit: a ping pipelined
// behind a create hung a healthy client until it timed out.)
func TestLimiterLetsAConnectionGoOnOnceItsOwnRequestsAreAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiter(2, 0, 0)
		done := make(chan struct{})
		none := func() int { return 0 }
		// A stuck connection takes the whole limit.
		if !l.acquire(10, none, done) || !l.acquire(10, func() int { return 1 }, done) {
			t.Fatal("the first requests waited")
		}
		// A healthy connection: its first request goes in (nothing of its
		// own in flight), its second must wait.
		var mine atomic.Int32
		if !l.acquire(10, none, done) {
			t.Fatal("a connection with nothing in flight waited")
		}
		mine.Store(1)
		admitted := make(chan bool, 1)
		go func() { admitted <- l.acquire(10, func() int { return int(mine.Load()) }, done) }()
		synctest.Wait()
		select {
		case <-admitted:
			t.Fatal("the second request went in while the first is in flight and the server is over its limit")
		default:
		}
		// Its first request is answered: the connection forgets it, then
		// releases it, as Conn.Send does.
		mine.Store(0)
		l.release(1, 10)
		synctest.Wait()
		select {
		case ok := <-admitted:
			if !ok {
				t.Fatal("acquire gave up")
			}
		default:
			t.Fatal("the connection still waits though nothing of its own is in flight")
		}
		if req, _, _ := l.InFlight(); req != 3 {
			t.Errorf("%d requests in flight, want 3 (two stuck, one healthy)", req)
		}
		close(done)
	})
}

// TestLimiterWaitEndsWithTheConnection: a waiting acquire returns false
// when its connection closes.
func TestLimiterWaitEndsWithTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiter(1, 0, 0)
		done := make(chan struct{})
		one := func() int { return 1 }
		if !l.acquire(1, one, done) {
			t.Fatal("the first request waited")
		}
		got := make(chan bool, 1)
		go func() { got <- l.acquire(1, one, done) }()
		synctest.Wait()
		close(done)
		if <-got {
			t.Fatal("acquire succeeded after its connection closed")
		}
	})
}
