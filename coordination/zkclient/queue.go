package zkclient

// callQueue is a FIFO of calls in a ring buffer, so that a steady stream
// of pipelined requests allocates nothing. Not safe for concurrent use;
// Conn.mu guards both of a Conn's queues.
type callQueue struct {
	buf  []call
	head int // index of the oldest call
	n    int // number of calls queued
}

// initialCallQueueLen is the starting ring size; it doubles as needed.
const initialCallQueueLen = 64

func (q *callQueue) init() { q.buf = make([]call, initialCallQueueLen) }

// push appends cl at the tail.
func (q *callQueue) push(cl call) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)%len(q.buf)] = cl
	q.n++
}

// pop removes and returns the head, or false if the queue is empty.
func (q *callQueue) pop() (call, bool) {
	if q.n == 0 {
		return call{}, false
	}
	cl := q.buf[q.head]
	q.buf[q.head] = call{} // drop references for the GC
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return cl, true
}

// unpop puts cl back at the head, undoing the last pop.
func (q *callQueue) unpop(cl call) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.head = (q.head - 1 + len(q.buf)) % len(q.buf)
	q.buf[q.head] = cl
	q.n++
}

// drain removes and returns every call, oldest first.
func (q *callQueue) drain() []call {
	out := make([]call, 0, q.n)
	for {
		cl, ok := q.pop()
		if !ok {
			return out
		}
		out = append(out, cl)
	}
}

// grow doubles the ring, keeping the order.
func (q *callQueue) grow() {
	size := 2 * len(q.buf)
	if size == 0 {
		size = initialCallQueueLen
	}
	buf := make([]call, size)
	for i := range q.n {
		buf[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = buf, 0
}
