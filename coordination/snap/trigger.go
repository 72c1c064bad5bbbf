package snap

import "math/rand/v2"

// Trigger decides when the next snapshot is due, with Apache ZooKeeper's
// randomisation (its SyncRequestProcessor), so that the members of an
// ensemble, which log the same txns, do not all snapshot at once. After
// each Reset it draws
//
//	txnRoll  uniform in [0, snapCount/2)
//	byteRoll uniform in [0, sizeLimitBytes/2)
//
// and a snapshot is due once more than snapCount/2 + txnRoll txns, or more
// than sizeLimitBytes/2 + byteRoll bytes, went to the log since the last
// Reset. The driver checks Due after each append, and when it is due resets
// the trigger, rolls the log and starts a snapshot (Java resets and rolls
// even when the previous snapshot is still running and it skips this one).
//
// The randomness comes from the caller's seeded *rand.Rand, so a simulation
// replays the same snapshot points. A Trigger is not safe for concurrent
// use.
type Trigger struct {
	snapCount      int
	sizeLimitBytes int64
	txnRoll        int
	byteRoll       int64
}

// Defaults of zookeeper.snapCount and zookeeper.snapSizeLimitInKb.
const (
	// DefaultSnapCount is ZooKeeper's default snapCount.
	DefaultSnapCount = 100000
	// DefaultSnapSizeLimitBytes is ZooKeeper's default snapSizeLimitInKb
	// (4194304 KiB), in bytes.
	DefaultSnapSizeLimitBytes int64 = 4194304 * 1024
	// minSnapCount is the smallest snapCount ZooKeeper accepts; it raises
	// smaller values to it.
	minSnapCount = 2
)

// NewTrigger returns a Trigger for snapCount txns (raised to 2 if smaller,
// as ZooKeeper does) and sizeLimitBytes of log (0 or less disables the size
// rule, as a non-positive snapSizeLimitInKb does), already Reset from rng.
func NewTrigger(snapCount int, sizeLimitBytes int64, rng *rand.Rand) *Trigger {
	t := &Trigger{snapCount: max(snapCount, minSnapCount), sizeLimitBytes: max(sizeLimitBytes, 0)}
	t.Reset(rng)
	return t
}

// Reset draws new random offsets; call it when a snapshot is started.
func (t *Trigger) Reset(rng *rand.Rand) {
	t.txnRoll = rng.IntN(t.snapCount / 2)
	t.byteRoll = 0
	if half := t.sizeLimitBytes / 2; half > 0 {
		t.byteRoll = rng.Int64N(half)
	}
}

// Due reports whether a snapshot is due after txnCount txns and logBytes
// bytes were appended to the log since the last Reset.
func (t *Trigger) Due(txnCount int, logBytes int64) bool {
	if txnCount > t.snapCount/2+t.txnRoll {
		return true
	}
	return t.sizeLimitBytes > 0 && logBytes > t.sizeLimitBytes/2+t.byteRoll
}
