package txnlog

import (
	"hash/maphash"

	"keeper/coordination/zxid"
)

// repeatWindow is how many of the latest records a reader remembers to
// recognise a repeat: far more than the txns a follower holds logged but
// not yet committed when its sync fails, which is what gets repeated.
const repeatWindow = 1 << 16

// repeats recognises a record that repeats, byte for byte, one of the
// latest records read before it.
//
// Apache ZooKeeper 3.8 writes such repeats: a follower whose sync fails
// after NEWLEADER (ZOOKEEPER-4394) has already logged the txns it got, and
// logs them again when it syncs anew, with a warning ("Current zxid ... is
// <= ... for create"). Its own reader replays them, and replaying a txn
// twice changes nothing. keeper's readers pass over a record whose zxid
// does not increase when it equals the record read earlier with that zxid,
// and refuse any other (docs/storage-recovery.md): a txn with the zxid of
// another but a different content is damage, not a repeat.
type repeats struct {
	seed    maphash.Seed
	sums    map[zxid.ID]uint64
	ring    []zxid.ID // the zxids in sums, oldest first from next
	next    int
	skipped int
}

func newRepeats() *repeats {
	return &repeats{seed: maphash.MakeSeed(), sums: map[zxid.ID]uint64{}}
}

// add remembers a record read in order.
func (r *repeats) add(z zxid.ID, payload []byte) {
	if len(r.ring) < repeatWindow {
		r.ring = append(r.ring, z)
	} else {
		delete(r.sums, r.ring[r.next])
		r.ring[r.next] = z
		r.next = (r.next + 1) % repeatWindow
	}
	r.sums[z] = maphash.Bytes(r.seed, payload)
}

// repeat reports whether payload, whose zxid z does not increase, repeats
// the record read earlier with zxid z; if so it counts it as skipped.
func (r *repeats) repeat(z zxid.ID, payload []byte) bool {
	sum, ok := r.sums[z]
	if !ok || sum != maphash.Bytes(r.seed, payload) {
		return false
	}
	r.skipped++
	return true
}
