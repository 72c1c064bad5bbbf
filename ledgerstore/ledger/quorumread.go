package ledger

import "slices"

// slotState is what one bookie has answered to a quorum read.
type slotState uint8

const (
	slotAsked    slotState = iota // request in flight
	slotUnknown                   // answered "unknown"; asked again at retryAt
	slotNegative                  // explicit NoSuchEntry / NoSuchLedger
	slotValid                     // a definitive answer other than a negative
	slotIdle                      // not asked yet (a read that asks one bookie first)
)

// quorumRead tracks one read sent to several bookies whose answers are
// counted: fence reads over an ensemble, recovery reads over a write set,
// LAC reads. Each bookie has at most one request in flight; a bookie whose
// answer was unknown is asked again after a delay, never counted as a
// negative.
type quorumRead struct {
	entryID   int64
	bookies   []BookieID
	state     []slotState
	retryAt   []int64 // tick at which an unknown slot is asked again
	negatives int
	sentAt    int64 // tick the read was started, for asking idle slots late
}

func newQuorumRead(entryID int64, bookies []BookieID) *quorumRead {
	return &quorumRead{
		entryID: entryID,
		bookies: slices.Clone(bookies),
		state:   make([]slotState, len(bookies)),
		retryAt: make([]int64, len(bookies)),
	}
}

// reset makes q a read of entryID over n bookies, every slot asked and its
// bookies left for the caller to fill in, keeping q's slices when they are
// large enough: recovery reuses the reads of entries it found.
func (q *quorumRead) reset(entryID int64, n int) {
	if cap(q.bookies) < n || cap(q.state) < n || cap(q.retryAt) < n {
		q.bookies, q.state, q.retryAt = make([]BookieID, n), make([]slotState, n), make([]int64, n)
	}
	q.bookies, q.state, q.retryAt = q.bookies[:n], q.state[:n], q.retryAt[:n]
	clear(q.state) // slotAsked
	clear(q.retryAt)
	q.entryID, q.negatives, q.sentAt = entryID, 0, 0
}

// outstanding returns the slot of b if its request is in flight, else −1:
// an answer is taken only for a request the read is waiting for.
func (q *quorumRead) outstanding(b BookieID) int {
	i := slices.Index(q.bookies, b)
	if i < 0 || q.state[i] != slotAsked {
		return -1
	}
	return i
}

// unknown records an unknown answer from slot i; it is asked again at tick at.
func (q *quorumRead) unknown(i int, at int64) {
	q.state[i], q.retryAt[i] = slotUnknown, at
}

// negative records an explicit negative from slot i.
func (q *quorumRead) negative(i int) {
	q.state[i] = slotNegative
	q.negatives++
}

// valid records a definitive non-negative answer from slot i.
func (q *quorumRead) valid(i int) { q.state[i] = slotValid }

// due returns the slots whose retry time has come, marking them asked.
func (q *quorumRead) due(now int64) []int {
	var out []int
	for i, s := range q.state {
		if s == slotUnknown && q.retryAt[i] <= now {
			q.state[i] = slotAsked
			out = append(out, i)
		}
	}
	return out
}

// idleFrom marks every slot from i on as not asked yet.
func (q *quorumRead) idleFrom(i int) {
	for ; i < len(q.state); i++ {
		q.state[i] = slotIdle
	}
}

// wake returns the slots not asked yet, marking them asked.
func (q *quorumRead) wake() []int {
	var out []int
	for i, s := range q.state {
		if s == slotIdle {
			q.state[i] = slotAsked
			out = append(out, i)
		}
	}
	return out
}

// definitive returns, per slot, whether its answer is definitive.
func (q *quorumRead) definitive() []bool {
	out := make([]bool, len(q.state))
	for i, s := range q.state {
		out[i] = s == slotNegative || s == slotValid
	}
	return out
}
