package quorumnet

import (
	"sync"
	"time"

	"keeper/coordination/zab"
)

// queue is a bounded FIFO of messages with one consumer at a time. Its
// storage grows with use, so a large bound costs nothing until it is used.
type queue struct {
	mu    sync.Mutex
	items []zab.Message // mu guards items
	bytes int64         // the Data bytes of items (mu)
	spare []zab.Message // a batch the consumer gave back (recycle), for items to reuse (mu)
	max   int
	ready chan struct{} // holds a token while items may be non-empty

	// With markEvery set, every markEvery-th message pushed is a marker:
	// its push time (the monotonic clock) is kept with its place in
	// items, and the batch wait returns it in reports its wait (mu).
	markEvery int64
	pushed    int64
	marker    int       // the marker's index in items; -1 when none is queued
	markedAt  time.Time // when the marker was pushed
}

func newQueue(max int) *queue {
	return &queue{max: max, ready: make(chan struct{}, 1), marker: -1}
}

// push appends m and reports whether there was room.
func (q *queue) push(m zab.Message) bool {
	q.mu.Lock()
	if len(q.items) >= q.max {
		q.mu.Unlock()
		return false
	}
	if q.markEvery > 0 {
		// One marker at a time: a later one waits for the next turn.
		if q.pushed%q.markEvery == 0 && q.marker < 0 {
			q.marker, q.markedAt = len(q.items), time.Now()
		}
		q.pushed++
	}
	q.items = append(q.items, m)
	q.bytes += int64(len(m.Data))
	q.mu.Unlock()
	q.signal()
	return true
}

// pushDropOldest appends m, dropping the oldest message if the queue is
// full. It reports whether one was dropped.
func (q *queue) pushDropOldest(m zab.Message) bool {
	q.mu.Lock()
	dropped := len(q.items) >= q.max
	if dropped {
		q.bytes -= int64(len(q.items[0].Data))
		q.items = append(q.items[:0], q.items[1:]...)
	}
	q.items = append(q.items, m)
	q.bytes += int64(len(m.Data))
	q.mu.Unlock()
	q.signal()
	return dropped
}

func (q *queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// recycle gives a batch wait returned back to the queue, whose storage
// later pushes reuse: a busy link then stops allocating.
func (q *queue) recycle(batch []zab.Message) {
	clear(batch) // drop the references to message data
	q.mu.Lock()
	if cap(batch) > cap(q.spare) {
		q.spare = batch[:0]
	}
	q.mu.Unlock()
}

// clear drops every queued message.
func (q *queue) clear() {
	q.mu.Lock()
	q.items, q.bytes, q.marker = nil, 0, -1
	q.mu.Unlock()
}

// size returns how many messages wait, and their Data bytes.
func (q *queue) size() (n int, bytes int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items), q.bytes
}

// wait returns every queued message, blocking until there is one; ok is
// false once done is closed. A consumer may give the batch back with
// recycle once it is done with it. A consumer that gives up passes the token on,
// so a consumer that replaced it is not left waiting.
func (q *queue) wait(done <-chan struct{}) (batch []zab.Message, ok bool) {
	batch, _, ok = q.waitMarked(done)
	return batch, ok
}

// waitMarked is wait that also returns how long the marker the batch holds
// waited in the queue, or a negative duration when it holds none.
func (q *queue) waitMarked(done <-chan struct{}) (batch []zab.Message, markerWait time.Duration, ok bool) {
	for {
		select {
		case <-done:
			q.signal()
			return nil, -1, false
		default:
		}
		q.mu.Lock()
		if len(q.items) > 0 {
			// Only a batch with messages is taken: taking an empty one
			// would drop the storage recycle gave back, and every push
			// after would allocate anew.
			batch, q.items, q.spare = q.items, q.spare, nil
			q.bytes = 0
			markerWait = -1
			if q.marker >= 0 {
				markerWait, q.marker = time.Since(q.markedAt), -1
			}
			q.mu.Unlock()
			return batch, markerWait, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-done:
			q.signal()
			return nil, -1, false
		}
	}
}
