package ledger

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"

	"keeper/ledgerstore/bkproto"
)

// DefaultRetryTicks is how long recovery and LAC reads wait, in ticks,
// before asking again a bookie whose answer was unknown, when the config
// leaves it zero.
const DefaultRetryTicks = 10

// recoveryMaxReAdds and recoveryMaxReAddBytes bound the re-adds in
// flight during recovery (the count, or ReadAheadEntries if that is more,
// and the entries' bytes): reading forward pauses while that many found
// entries await their ack quorum, so a slow bookie cannot make recovery
// buffer a whole ledger. A re-add waits for a journal sync at Qw bookies,
// so the window, not the CPU, bounds recovery when it is small: 1,024
// re-adds of 1 KiB keep the bookies' group commit busy, and 32 MiB bounds
// the memory whatever the entries' size.
const (
	recoveryMaxReAdds     = 1024
	recoveryMaxReAddBytes = 32 << 20
)

// reAddRoom reports whether recovery may hand the writer another found
// entry, within the bounds above.
func (r *Recovery) reAddRoom() bool {
	return int64(len(r.w.pending)) < max(recoveryMaxReAdds, r.readAhead) && r.w.pendingBytes < recoveryMaxReAddBytes
}

// RecoveryConfig configures a Recovery.
type RecoveryConfig struct {
	LedgerID int64
	// Metadata is the ledger's metadata as read from the store, with its
	// version.
	Metadata Metadata
	// Bookies are the candidates for replacements while re-adding.
	Bookies Candidates
	// Rand drives the choice of replacements. nil: sorted order.
	Rand *rand.Rand
	// Policy chooses the replacements (see WriterConfig.Policy).
	Policy PlacementPolicy
	// RetryTicks is the delay before asking again a bookie whose answer was
	// unknown (0: DefaultRetryTicks).
	RetryTicks int
	// ReadAheadEntries is how many entries are read forward at once
	// (recoveryReadBatchSize; 0: 1, the Java default).
	ReadAheadEntries int
	// BatchReadMaxSize, when positive, reads forward in batches (v2
	// BATCH_READ_ENTRY, at most this many bytes each) if every bookie holds
	// every entry (E = Qw), as BookKeeper's client does; the driver must
	// speak v2. A batch that gets no answer, or one a bookie does not
	// understand, turns batching off for the rest of the recovery.
	BatchReadMaxSize int64
	// Logger receives phase changes. nil: discard.
	Logger *slog.Logger
}

// Validate checks the metadata (any state: a closed ledger needs no
// recovery, which NewRecovery reports at once).
func (cfg RecoveryConfig) Validate() error { return cfg.Metadata.Validate() }

type recoveryPhase uint8

const (
	phaseMark    recoveryPhase = iota // CAS OPEN → IN_RECOVERY in flight
	phaseFence                        // fence reads until ensemble coverage
	phaseForward                      // reading forward from LAC+1, re-adding what is found
	phaseClosing                      // re-adds finishing, then CAS IN_RECOVERY → CLOSED
	phaseDone
)

// Recovery opens a ledger with recovery (docs/bookkeeper-protocol.md §4.1): it marks the metadata
// IN_RECOVERY, fences the last ensemble, finds the LAC, reads forward until
// a coverage quorum of explicit negatives, re-adds every entry found with
// RECOVERY_ADD, and closes the ledger with a compare-and-set.
//
// Rules it keeps, each one an Appendix A pitfall:
//   - The LAC is trusted only after ensemble coverage of fence answers,
//     and is the maximum header LAC of the bookies' last entries, never an
//     entry id, floored at the first entry of the last ensemble − 1 (2, 5).
//   - Every read it sends carries the fence flag and the master key (2).
//   - An entry is absent only after Qw − Qa + 1 explicit NoSuchEntry or
//     NoSuchLedger answers from its write set. Timeouts, EIO,
//     EUNKNOWNLEDGERSTATE and bad digests are unknown: the bookie is asked
//     again after RetryTicks, and recovery waits (1).
//   - Re-adds carry RECOVERY_ADD and must reach Qa; bookie failures during
//     them change the ensemble locally, folded into the closing write (6).
//   - Entry LAC_r itself is read once (from its own segment) for the
//     ledger's length there, the closing length if nothing lies beyond.
//   - Re-added entries keep their payload and cumulative length; their LAC
//     field is the LAC recovery started from, which every possible closing
//     point covers, so concurrent recoveries that close at different points
//     never let a bookie advertise a LAC above the ledger's end.
//
// Recovery never gives up on unknown answers by itself: while a bookie it
// needs stays silent it keeps asking. The driver bounds it with a deadline
// and starts again later; nothing is written until the closing CAS.
//
// A Recovery is not safe for concurrent use.
type Recovery struct {
	ledgerID   int64
	md         Metadata
	placement  Placement
	masterKey  [bkproto.MasterKeyBytes]byte
	macKey     []byte
	bookies    Candidates
	rng        *rand.Rand
	policy     PlacementPolicy
	logger     *slog.Logger
	retryTicks int64
	readAhead  int64
	now        int64 // ticks since start
	phase      recoveryPhase

	markMD Metadata    // the IN_RECOVERY write in flight (phaseMark)
	fenced Segment     // the last segment, fenced
	fence  *quorumRead // fence reads, one slot per ensemble position
	maxLAC int64       // greatest header LAC among fence answers

	lacR         int64 // where reading forward starts: LAC_r
	anchor       *quorumRead
	anchorLength int64 // cumulative length at lacR, once the anchor read found it
	reads        map[int64]*quorumRead
	spare        []*quorumRead // reads of found entries, for forwardRead to reuse
	found        map[int64]bkproto.Entry
	batchMaxSize int64 // BatchReadMaxSize; 0 once batches are off
	nextRead     int64 // next entry to start reading
	nextAdd      int64 // next entry to hand to the writer
	end          int64 // first entry known absent; math.MaxInt64 until then
	w            *Writer
	readCount    int64 // entries read forward and handed to the writer (Outcome.RecoveryReads)
	addCount     int64 // re-adds that reached Qa (Outcome.RecoveryAdds)
	ready        Ready
}

// NewRecovery starts recovering a ledger. The first Ready holds the
// IN_RECOVERY metadata write (OPEN ledger), the fence reads (already
// IN_RECOVERY), or Done (already CLOSED: nothing to recover).
func NewRecovery(cfg RecoveryConfig) (*Recovery, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	md := cfg.Metadata.Clone()
	r := &Recovery{
		ledgerID:     cfg.LedgerID,
		md:           md,
		placement:    md.Placement(),
		masterKey:    bkproto.MasterKey(md.Password),
		bookies:      cfg.Bookies,
		rng:          cfg.Rand,
		policy:       cfg.Policy,
		logger:       orDiscard(cfg.Logger),
		retryTicks:   int64(cmpOr(cfg.RetryTicks, DefaultRetryTicks)),
		readAhead:    int64(cmpOr(cfg.ReadAheadEntries, 1)),
		batchMaxSize: cfg.BatchReadMaxSize,
		maxLAC:       bkproto.LastAddConfirmed,
		end:          math.MaxInt64,
	}
	if md.Digest() == bkproto.DigestHMAC {
		k := bkproto.MacKey(md.Password)
		r.macKey = k[:]
	}
	switch md.State {
	case StateClosed:
		r.finish(md, nil)
	case StateInRecovery:
		r.startFence()
	default:
		r.mark(md)
	}
	return r, nil
}

func cmpOr(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

// Ready returns the work accumulated since the last call.
func (r *Recovery) Ready() Ready { return r.ready.take() }

// SetBookies replaces the candidates for replacement bookies.
func (r *Recovery) SetBookies(c Candidates) {
	r.bookies = c
	if r.w != nil {
		r.w.SetBookies(c)
	}
}

// LACRecovered returns LAC_r, where reading forward started, once fencing
// reached ensemble coverage (ok false before).
func (r *Recovery) LACRecovered() (lac int64, ok bool) {
	return r.lacR, r.phase >= phaseForward && r.w != nil
}

// mark asks for the IN_RECOVERY write on top of base (docs/bookkeeper-protocol.md §4.1 step 1).
func (r *Recovery) mark(base Metadata) {
	r.phase = phaseMark
	r.markMD = base.Clone()
	r.markMD.State = StateInRecovery
	r.ready.MetadataWrite = &MetadataWrite{Metadata: r.markMD.Clone()}
}

// HandleMetadataWritten reports that the metadata write in flight landed.
func (r *Recovery) HandleMetadataWritten(version int64) {
	switch r.phase {
	case phaseMark:
		r.md = r.markMD
		r.md.Version = version
		r.startFence()
	case phaseClosing:
		r.w.HandleMetadataWritten(version)
		r.absorb()
	}
}

// HandleMetadata feeds the current metadata: the answer to a write that
// did not land (or whose outcome is unknown), or a watch notification. A
// CLOSED ledger ends recovery at once, successfully: another client closed
// it, and its end is the ledger's end.
func (r *Recovery) HandleMetadata(current Metadata) {
	if r.phase == phaseDone {
		return
	}
	if current.State == StateClosed {
		r.finish(current, nil)
		return
	}
	switch r.phase {
	case phaseMark:
		if current.State == StateInRecovery {
			r.md = current.Clone() // ours landed after all, or another recovery's did
			r.startFence()
		} else {
			r.mark(current)
		}
	case phaseClosing:
		r.w.HandleMetadata(current)
		r.absorb()
	}
}

// startFence sends the fence reads: READ_ENTRY of entry −1 with
// FENCE_LEDGER and the master key, to every bookie of the last ensemble
// (docs/bookkeeper-protocol.md §4.1 step 2).
func (r *Recovery) startFence() {
	r.phase = phaseFence
	last := r.md.LastSegment()
	r.fenced = Segment{FirstEntryID: last.FirstEntryID, Bookies: slices.Clone(last.Bookies)}
	r.fence = newQuorumRead(bkproto.LastAddConfirmed, r.fenced.Bookies)
	for _, b := range r.fenced.Bookies {
		r.ask(b, bkproto.LastAddConfirmed)
	}
}

// ask sends a recovery read. Every read recovery sends fences (pitfall 2).
func (r *Recovery) ask(b BookieID, entryID int64) {
	r.ready.Reads = append(r.ready.Reads, ReadRequest{
		Bookie:    b,
		Kind:      ReadEntry,
		LedgerID:  r.ledgerID,
		EntryID:   entryID,
		Fence:     true,
		MasterKey: r.masterKey,
	})
}

// HandleRead feeds a bookie's answer to one of recovery's reads.
func (r *Recovery) HandleRead(req ReadRequest, reply ReadReply) {
	switch {
	case r.phase == phaseFence && req.EntryID == bkproto.LastAddConfirmed:
		if i := r.fence.outstanding(req.Bookie); i >= 0 {
			r.handleFence(i, reply)
		}
	case r.phase != phaseForward && r.phase != phaseClosing:
	case req.BatchMaxCount > 0:
		r.handleBatch(req, reply)
	case r.anchor != nil && req.EntryID == r.anchor.entryID:
		if i := r.anchor.outstanding(req.Bookie); i >= 0 {
			r.handleAnchor(i, reply)
		}
	case r.reads[req.EntryID] != nil:
		if i := r.reads[req.EntryID].outstanding(req.Bookie); i >= 0 {
			r.handleForward(req.EntryID, i, reply)
		}
	}
}

// handleFence counts one fence answer and starts reading forward once the
// answers cover the ensemble (docs/bookkeeper-protocol.md §4.1 steps 3-4).
func (r *Recovery) handleFence(i int, reply ReadReply) {
	switch {
	case reply.Status == bkproto.StatusCode_EOK:
		e, err := bkproto.DecodeEntry(reply.Body, r.md.Digest(), r.macKey, r.ledgerID, bkproto.LastAddConfirmed)
		if err != nil {
			r.fence.unknown(i, r.now+r.retryTicks)
			return
		}
		r.fence.valid(i)
		r.maxLAC = max(r.maxLAC, e.LAC) // the header LAC, never the entry id (pitfall 5)
	case isNegative(reply.Status):
		r.fence.valid(i)
	case reply.Status == bkproto.StatusCode_EUA:
		r.fail(fmt.Errorf("ledger %d: fence at bookie %s: %w", r.ledgerID, r.fence.bookies[i], bkproto.ErrUnauthorized))
		return
	default:
		r.fence.unknown(i, r.now+r.retryTicks)
		return
	}
	if r.placement.EnsembleCovered(r.fence.definitive()) {
		r.startForward()
	}
}

// Tick advances recovery's clock by one tick: bookies whose answers were
// unknown are asked again once their delay has passed.
func (r *Recovery) Tick() {
	r.now++
	switch r.phase {
	case phaseFence:
		for _, i := range r.fence.due(r.now) {
			r.ask(r.fence.bookies[i], bkproto.LastAddConfirmed)
		}
	case phaseForward, phaseClosing:
		if r.anchor != nil {
			for _, i := range r.anchor.due(r.now) {
				r.ask(r.anchor.bookies[i], r.anchor.entryID)
			}
		}
		for _, e := range sortedKeys(r.reads) {
			q := r.reads[e]
			for _, i := range q.due(r.now) {
				r.ask(q.bookies[i], e)
			}
			if r.now >= q.sentAt+r.retryTicks {
				r.wakeRest(q) // the first bookie is slow: ask the others too
			}
		}
	}
}

func (r *Recovery) fail(err error) {
	r.finish(Metadata{}, err)
}

func (r *Recovery) finish(md Metadata, err error) {
	if r.phase == phaseDone {
		return
	}
	r.phase = phaseDone
	r.reads, r.anchor = nil, nil
	if err == nil {
		r.logger.Info("ledger recovered", "ledger", r.ledgerID, "last", md.LastEntryID, "length", md.Length)
	}
	r.ready.Done = &Outcome{Err: err, Metadata: md.Clone(), LAC: md.LastEntryID,
		RecoveryReads: r.readCount, RecoveryAdds: r.addCount}
}

func sortedKeys[V any](m map[int64]V) []int64 {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
