package quorumnet

import (
	"testing"
	"testing/synctest"

	"keeper/coordination/zab"
)

// The queue's size follows every way messages enter and leave it.
func TestQueueSize(t *testing.T) {
	msg := func(n int) zab.Message { return zab.Message{Type: zab.MsgProposal, Data: make([]byte, n)} }
	tests := []struct {
		name      string
		do        func(q *queue)
		wantN     int
		wantBytes int64
	}{
		{name: "empty", do: func(*queue) {}},
		{name: "pushed", do: func(q *queue) { q.push(msg(10)); q.push(msg(5)) }, wantN: 2, wantBytes: 15},
		{name: "refused when full", do: func(q *queue) { q.push(msg(1)); q.push(msg(2)); q.push(msg(3)); q.push(msg(4)) },
			wantN: 3, wantBytes: 6},
		{name: "oldest dropped", do: func(q *queue) {
			q.push(msg(1))
			q.push(msg(2))
			q.push(msg(3))
			q.pushDropOldest(msg(10))
		}, wantN: 3, wantBytes: 15},
		{name: "taken", do: func(q *queue) {
			q.push(msg(7))
			q.wait(make(chan struct{}))
			q.push(msg(2))
		}, wantN: 1, wantBytes: 2},
		{name: "cleared", do: func(q *queue) { q.push(msg(7)); q.clear() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(3)
			tc.do(q)
			if n, b := q.size(); n != tc.wantN || b != tc.wantBytes {
				t.Fatalf("size %d, %d bytes; want %d, %d", n, b, tc.wantN, tc.wantBytes)
			}
		})
	}
}

// Batches given back are the storage of later ones (two alternate: the
// one given back becomes the queue's when the next batch is taken), also
// when the consumer finds the queue empty in between: it then waits, and
// must not take the empty storage away with it.
func TestQueueReusesRecycledBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		defer close(done)
		q := newQueue(16)
		q.push(zab.Message{Type: zab.MsgAck})
		q.push(zab.Message{Type: zab.MsgAck})
		first, _ := q.wait(done)
		q.recycle(first)
		q.push(zab.Message{Type: zab.MsgCommit})
		second, _ := q.wait(done) // the queue's storage is now first's
		q.recycle(second)
		got := make(chan []zab.Message)
		go func() {
			b, _ := q.wait(done)
			got <- b
		}()
		synctest.Wait() // the consumer found the queue empty and waits
		q.push(zab.Message{Type: zab.MsgCommit})
		if third := <-got; &third[0] != &first[0] {
			t.Fatal("a wait on an empty queue lost the recycled storage")
		}
	})
}
