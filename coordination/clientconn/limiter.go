package clientconn

import (
	"sync"
	"time"
)

// Limiter bounds the requests all connections of a server have read and
// the core has not yet answered: ZooKeeper's globalOutstandingLimit, and
// the request throttle (zookeeper.request_throttle_max_requests). It also
// bounds the bytes of those requests. A connection waits before reading a
// request while the server is over a limit, unless the connection has no
// request of its own in flight: like ZooKeeper, a throttled server slows
// every client down to one request at a time but stops none, so a client
// whose requests cannot finish (it does not read its replies) cannot stop
// the others.
//
// A Limiter is shared by the connections of one server and safe for
// concurrent use. The zero limits mean no limit.
type Limiter struct {
	maxRequests int
	maxBytes    int64
	stall       time.Duration

	mu       sync.Mutex
	requests int   // mu guards requests, bytes, changed
	bytes    int64 // bytes of the requests in flight
	changed  chan struct{}
	waits    int64 // times a reader waited (for stats)
}

// NewLimiter returns a limiter of maxRequests requests and maxBytes bytes
// in flight over all connections; 0 disables a limit. A waiting reader
// checks again at least every stall (0: only when a request completes).
func NewLimiter(maxRequests int, maxBytes int64, stall time.Duration) *Limiter {
	return &Limiter{maxRequests: maxRequests, maxBytes: maxBytes, stall: stall, changed: make(chan struct{})}
}

// overLocked reports whether n more bytes would put the server over a limit.
// mu must be held.
func (l *Limiter) overLocked(n int) bool {
	if l.maxRequests > 0 && l.requests >= l.maxRequests {
		return true
	}
	return l.maxBytes > 0 && l.bytes+int64(n) > l.maxBytes
}

// acquire takes room for one request of n bytes. own returns the number
// of the connection's requests in flight now; with none, it never waits.
// own is asked again after every wait: the connection's own requests are
// answered while it waits (each answer closes changed), and once none is
// left it must go on even if the server is still over its limit, or a
// connection that pipelined a second request (a ping behind a create)
// would wait for the clients holding the limit. It returns false if done
// closed while it waited.
func (l *Limiter) acquire(n int, own func() int, done <-chan struct{}) bool {
	if l == nil {
		return true
	}
	for {
		// own runs under mu: an answer that comes after it is released
		// (closing changed) only after this goroutine has taken changed.
		// own takes the connection's lock, and nothing holds that lock
		// while it calls the Limiter, so the order mu, then the
		// connection's lock, cannot deadlock.
		l.mu.Lock()
		if own() == 0 || !l.overLocked(n) {
			l.requests++
			l.bytes += int64(n)
			l.mu.Unlock()
			return true
		}
		changed := l.changed
		l.waits++
		l.mu.Unlock()
		if !wait(changed, done, l.stall) {
			return false
		}
	}
}

// release gives back requests totalling bytes, and wakes the waiters.
func (l *Limiter) release(requests int, bytes int64) {
	if l == nil || requests == 0 {
		return
	}
	l.mu.Lock()
	l.requests -= requests
	l.bytes -= bytes
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// InFlight returns the requests and bytes the limiter counts now, and how
// many times a reader has had to wait.
func (l *Limiter) InFlight() (requests int, bytes int64, waits int64) {
	if l == nil {
		return 0, 0, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests, l.bytes, l.waits
}

// wait blocks until changed or done closes, or stall passes (0: no
// stall). It returns false if done closed.
func wait(changed, done <-chan struct{}, stall time.Duration) bool {
	if stall <= 0 {
		select {
		case <-changed:
			return true
		case <-done:
			return false
		}
	}
	t := time.NewTimer(stall)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-done:
		return false
	}
	return true
}
