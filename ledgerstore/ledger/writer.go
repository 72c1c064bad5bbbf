package ledger

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"

	"keeper/internal/invariants"
	"keeper/ledgerstore/bkproto"
)

// DefaultMaxPendingAdds bounds a writer's unacknowledged adds when the
// config leaves it zero. It matches the Java client's default throttle
// (5000 outstanding adds), which keeps a stalled ensemble change from
// buffering without limit.
const DefaultMaxPendingAdds = 5000

// WriterConfig configures a Writer.
type WriterConfig struct {
	LedgerID int64
	// Metadata is the new ledger's metadata (NewMetadata) with the version
	// the store gave it: state OPEN, one segment at entry 0. A ledger has
	// one writer, the client that created it.
	Metadata Metadata
	// Bookies are the candidates for replacements; see SetBookies.
	Bookies Candidates
	// OnlyBookies, if not empty, are the only bookies the ledger may ever
	// use: replacements come from them alone, as BookKeeper's
	// LocalBookieEnsemblePlacementPolicy keeps a ledger on one bookie (a
	// failed bookie then fails the writer rather than move the ledger).
	OnlyBookies []BookieID
	// Rand drives the choice of replacements. nil: the first eligible
	// bookie in sorted order.
	Rand *rand.Rand
	// Policy chooses the replacements (the zero value is the rack-aware
	// policy, which without rack information chooses at random).
	Policy PlacementPolicy
	// MaxPendingAdds bounds unacknowledged adds (0: DefaultMaxPendingAdds).
	MaxPendingAdds int
	// ExplicitLACTicks is BookKeeper's explicitLacInterval in ticks: while
	// no add carries the LAC to the bookies, the writer sends it with
	// WRITE_LAC this often (see Tick). 0: never.
	ExplicitLACTicks int
	// Logger receives state changes (ensemble changes, fencing). nil: discard.
	Logger *slog.Logger
}

// Writer is the state of one ledger being written (docs/bookkeeper-protocol.md §2): it numbers
// entries, encodes them with the piggybacked LAC, stripes them over the
// ensemble, counts acknowledgements, advances the LAC contiguously, replaces
// failed bookies through ensemble changes, and closes the ledger.
//
// Ordering rules it keeps (docs/bookkeeper-protocol.md §1.6):
//   - Completions are delivered strictly in entry order; the LAC advances
//     one entry at a time and only over acknowledged entries (I2, pitfall 4).
//   - While an ensemble change is in flight, the LAC and completions are
//     frozen, and the replacement bookies receive nothing, until the driver
//     reports that the metadata write landed (I3, I4, pitfall 3).
//   - The new segment starts at LAC+1; no entry ≤ LAC ever moves.
//   - EFENCED from any bookie, or metadata found IN_RECOVERY or CLOSED,
//     finishes the writer: pending adds fail with ErrOutcomeUnknown and the
//     cause, later appends fail without it (pitfall 7).
//
// A Writer is not safe for concurrent use.
type Writer struct {
	ledgerID  int64
	md        Metadata // last metadata known to be stored (or, in recovery, the local view)
	placement Placement
	ensemble  []BookieID // md's last segment
	masterKey [bkproto.MasterKeyBytes]byte
	macKey    []byte
	bookies   Candidates
	only      []BookieID // WriterConfig.OnlyBookies
	rng       *rand.Rand
	policy    PlacementPolicy
	logger    *slog.Logger
	maxAdds   int

	// Recovery mode (newRecoveryWriter): adds carry RECOVERY_ADD, carry
	// stampLAC as their LAC, and ensemble changes stay local.
	recovery     bool
	stampLAC     int64
	baseSegments []Segment // the stored segments the local view started from

	lap, lac  int64 // last add pushed, last add confirmed
	length    int64 // cumulative payload bytes up to lap
	lacLength int64 // cumulative payload bytes up to lac
	pending   []*pendingAdd
	// pendingBytes is the entry bytes of pending (recovery bounds it).
	pendingBytes int64

	failed      []BookieID    // ensemble members reported failed, not yet replaced; sorted
	quarantined []BookieID    // every bookie that failed on this writer; sorted
	change      *Metadata     // proposed ensemble change in flight; nil when none
	write       *pendingWrite // metadata write in flight; nil when none
	explicit    explicitLAC   // the explicit LAC policy (Tick)
	closing     bool          // Close was called
	err         error         // terminal error; pending and future adds fail with it
	done        bool          // Done was emitted
	ready       Ready
}

// pendingAdd is one entry between Append and its completion.
type pendingAdd struct {
	entryID int64
	length  int64 // cumulative payload bytes up to and including this entry
	body    []byte
	sent    []bool     // per position: sent to the bookie now at that position
	ackedBy []BookieID // per position: the bookie whose ack is recorded there
	sentAny bool       // sent to at least one bookie: a failure is "outcome unknown"
	// inflight lists the bookies with an add of this entry awaiting its
	// answer. A bookie that comes back to the ensemble is not sent the
	// entry again while one is in flight: its answer will count (pitfall 10).
	inflight []BookieID
}

type writeKind uint8

const (
	writeChange writeKind = iota + 1
	writeClose
)

// pendingWrite is the metadata write in flight.
type pendingWrite struct {
	kind writeKind
	md   Metadata
}

// Validate checks that the config describes a new ledger: valid metadata,
// OPEN, with one segment.
func (cfg WriterConfig) Validate() error {
	md := cfg.Metadata
	if err := md.Validate(); err != nil {
		return err
	}
	if md.State != StateOpen || len(md.Segments) != 1 {
		return fmt.Errorf("ledger: writer needs a new ledger (OPEN, one segment), have %v with %d segments",
			md.State, len(md.Segments))
	}
	return nil
}

// NewWriter returns the writer of a newly created ledger.
func NewWriter(cfg WriterConfig) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newWriter(cfg, -1, 0), nil
}

// newWriter builds a writer whose LAC (and LAP) is lac and whose length up
// to lac is length.
func newWriter(cfg WriterConfig, lac, length int64) *Writer {
	md := cfg.Metadata.Clone()
	w := &Writer{
		ledgerID:  cfg.LedgerID,
		md:        md,
		placement: md.Placement(),
		ensemble:  md.LastSegment().Bookies,
		masterKey: bkproto.MasterKey(md.Password),
		bookies:   cfg.Bookies.Only(cfg.OnlyBookies),
		only:      cfg.OnlyBookies,
		rng:       cfg.Rand,
		policy:    cfg.Policy,
		logger:    orDiscard(cfg.Logger),
		maxAdds:   cfg.MaxPendingAdds,
		lap:       lac,
		lac:       lac,
		length:    length,
		lacLength: length,
		explicit:  explicitLAC{interval: int64(max(cfg.ExplicitLACTicks, 0)), sent: lac, carried: lac},
	}
	if md.Digest() == bkproto.DigestHMAC {
		k := bkproto.MacKey(md.Password)
		w.macKey = k[:]
	}
	if w.maxAdds <= 0 {
		w.maxAdds = DefaultMaxPendingAdds
	}
	return w
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// LAC returns the last add confirmed: every entry up to it is acknowledged.
func (w *Writer) LAC() int64 { return w.lac }

// LastAddPushed returns the highest entry id assigned so far.
func (w *Writer) LastAddPushed() int64 { return w.lap }

// Metadata returns the writer's view of the ledger's metadata: the last
// version it knows to be stored.
func (w *Writer) Metadata() Metadata { return w.md.Clone() }

// Err returns the error that finished the writer, or nil.
func (w *Writer) Err() error { return w.err }

// Ready returns the work accumulated since the last call.
func (w *Writer) Ready() Ready { return w.ready.take() }

// SetBookies replaces the candidates for replacement bookies (after a
// registration change), keeping only those OnlyBookies allows.
func (w *Writer) SetBookies(c Candidates) { w.bookies = c.Only(w.only) }

// Append assigns payload the next entry id and queues its adds to the
// write set. It returns the entry id, or an error if the add was not sent
// at all (the writer is closing or finished, or too many adds are pending);
// such an add is certainly not in the ledger. The outcome arrives later as
// a Completion. payload is copied into the encoded entry.
func (w *Writer) Append(payload []byte) (int64, error) {
	switch {
	case w.err != nil:
		return -1, w.err
	case w.closing:
		return -1, fmt.Errorf("%w: close called", ErrLedgerClosed)
	case len(w.pending) >= w.maxAdds:
		return -1, fmt.Errorf("%w: %d", ErrTooManyPending, len(w.pending))
	}
	id := w.lap + 1
	w.push(id, w.length+int64(len(payload)), w.lac, payload)
	return id, nil
}

// appendRecovered re-adds an entry recovery found, with its original
// cumulative length (recovery mode only).
func (w *Writer) appendRecovered(entryID, length int64, payload []byte) {
	invariants.Assertf(w.recovery && entryID == w.lap+1,
		"ledger %d: recovery re-add of entry %d, last pushed %d", w.ledgerID, entryID, w.lap)
	w.push(entryID, length, w.stampLAC, payload)
}

func (w *Writer) push(id, length, lac int64, payload []byte) {
	// ackedBy and inflight share one allocation; inflight's capacity is
	// the write quorum, and an append beyond it (a replacement's add while
	// the replaced bookie's is in flight) moves it out.
	e, qw := w.placement.EnsembleSize, w.placement.WriteQuorum
	ids := make([]BookieID, e+qw)
	pa := &pendingAdd{
		entryID:  id,
		length:   length,
		body:     bkproto.EncodeEntry(w.ledgerID, id, lac, length, w.md.Digest(), w.macKey, payload),
		sent:     make([]bool, e),
		ackedBy:  ids[:e:e],
		inflight: ids[e : e : e+qw],
	}
	w.lap, w.length = id, length
	w.explicit.carried = max(w.explicit.carried, lac)
	w.pending = append(w.pending, pa)
	w.pendingBytes += int64(len(pa.body))
	w.send(pa)
}

// send queues pa's adds to every write-set position not yet sent to,
// except positions whose bookie awaits replacement: those get the entry
// once the replacement is in the stored metadata.
func (w *Writer) send(pa *pendingAdd) {
	for k := range w.placement.WriteQuorum {
		pos := w.placement.Position(pa.entryID, k)
		b := w.ensemble[pos]
		if pa.sent[pos] || slices.Contains(w.failed, b) {
			continue
		}
		pa.sent[pos], pa.sentAny = true, true
		if slices.Contains(pa.inflight, b) {
			continue
		}
		pa.inflight = append(pa.inflight, b)
		w.ready.Adds = append(w.ready.Adds, AddRequest{
			Bookie:    b,
			LedgerID:  w.ledgerID,
			EntryID:   pa.entryID,
			MasterKey: w.masterKey,
			Body:      pa.body,
			Recovery:  w.recovery,
		})
	}
}

// HandleAdd feeds a bookie's answer to an AddRequest (status NoResponse if
// there was none). Answers from bookies no longer at a write-set position
// of the entry are ignored: they do not count towards the entry's quorum.
func (w *Writer) HandleAdd(req AddRequest, status bkproto.StatusCode) {
	if w.done || w.err != nil {
		return
	}
	pa := w.pendingFor(req.EntryID)
	if pa != nil {
		pa.inflight = slices.DeleteFunc(pa.inflight, func(b BookieID) bool { return b == req.Bookie })
	}
	switch status {
	case bkproto.StatusCode_EOK:
		if pa != nil {
			if pos := slices.Index(w.ensemble, req.Bookie); w.placement.InWriteSet(pa.entryID, pos) && pa.sent[pos] {
				pa.ackedBy[pos] = req.Bookie
				w.drain()
			}
		}
	case bkproto.StatusCode_EFENCED:
		w.logger.Info("writer fenced", "ledger", w.ledgerID, "bookie", req.Bookie, "entry", req.EntryID)
		w.fail(fmt.Errorf("%w: bookie %s answered EFENCED for entry %d", ErrLedgerFenced, req.Bookie, req.EntryID))
	case bkproto.StatusCode_EUA:
		w.fail(fmt.Errorf("ledger %d: bookie %s: %w", w.ledgerID, req.Bookie, bkproto.ErrUnauthorized))
	default:
		if pa == nil && req.EntryID <= w.lac && w.stillAt(req) {
			w.ready.Stats.UnderReplicatedAdds++
		}
		w.BookieFailed(req.Bookie)
	}
}

// stillAt reports whether req's bookie still holds a position of req's
// entry's write set: its failure then leaves that entry short of a copy.
func (w *Writer) stillAt(req AddRequest) bool {
	if req.EntryID < w.md.LastSegment().FirstEntryID {
		return false
	}
	pos := slices.Index(w.ensemble, req.Bookie)
	return pos >= 0 && w.placement.InWriteSet(req.EntryID, pos)
}

// BookieFailed reports that a bookie of the ensemble failed (an error
// answer, or a dead connection the driver noticed). It starts an ensemble
// change, or queues the bookie for the next one if a change is in flight.
func (w *Writer) BookieFailed(b BookieID) {
	if w.done || w.err != nil || !slices.Contains(w.ensemble, b) || slices.Contains(w.failed, b) {
		return
	}
	w.failed = append(w.failed, b)
	slices.Sort(w.failed)
	if !slices.Contains(w.quarantined, b) {
		w.quarantined = append(w.quarantined, b)
		slices.Sort(w.quarantined)
	}
	if w.change == nil {
		w.startChange()
	}
}

func (w *Writer) pendingFor(entryID int64) *pendingAdd {
	if len(w.pending) == 0 {
		return nil
	}
	i := entryID - w.pending[0].entryID
	if i < 0 || i >= int64(len(w.pending)) {
		return nil
	}
	return w.pending[i]
}

// acks counts pa's acknowledgements from the bookies now at its write-set
// positions.
func (w *Writer) acks(pa *pendingAdd) int {
	n := 0
	for k := range w.placement.WriteQuorum {
		pos := w.placement.Position(pa.entryID, k)
		if pa.ackedBy[pos] != "" && pa.ackedBy[pos] == w.ensemble[pos] {
			n++
		}
	}
	return n
}

// drain completes acknowledged entries from the head of the pending queue:
// only the head may complete, so completions and the LAC follow entry order
// even when acknowledgements do not (pitfall 4). Nothing completes while an
// ensemble change is in flight (I4, pitfall 3).
func (w *Writer) drain() {
	if w.change != nil {
		return
	}
	for len(w.pending) > 0 && w.acks(w.pending[0]) >= w.placement.AckQuorum {
		pa := w.pending[0]
		w.pending = w.pending[1:]
		w.pendingBytes -= int64(len(pa.body))
		invariants.Assertf(pa.entryID == w.lac+1, "ledger %d: completing entry %d with LAC %d",
			w.ledgerID, pa.entryID, w.lac)
		w.lac, w.lacLength = pa.entryID, pa.length
		w.ready.Completions = append(w.ready.Completions, Completion{EntryID: pa.entryID})
	}
	w.maybeClose()
}

// fail finishes the writer with err: every pending add fails, in entry
// order, as outcome unknown. A metadata write in flight stays tracked so
// that its answer is still understood.
func (w *Writer) fail(err error) {
	w.failPending(err)
	if w.recovery {
		// A recovery that could not re-add every entry it found must not
		// close the ledger short of them: the entries may be acknowledged.
		return
	}
	w.maybeClose()
}

// failPending is fail without starting a close.
func (w *Writer) failPending(err error) {
	if w.err != nil {
		return
	}
	w.err = err
	for _, pa := range w.pending {
		e := err
		if pa.sentAny {
			e = fmt.Errorf("entry %d: %w: %w", pa.entryID, ErrOutcomeUnknown, err)
		}
		w.ready.Completions = append(w.ready.Completions, Completion{EntryID: pa.entryID, Err: e})
	}
	w.pending, w.change, w.failed = nil, nil, nil
	w.pendingBytes = 0
}

// Close stops accepting adds and closes the ledger once the pending adds
// have completed (or failed): a compare-and-set to CLOSED with
// LastEntryID = LAC and the length up to it (docs/bookkeeper-protocol.md §2.4). Ready.Done
// reports the outcome: success (also when the ledger is found already
// closed at the same point), ErrLedgerClosed if another client closed it
// elsewhere, ErrLedgerFenced if it is in recovery.
func (w *Writer) Close() {
	if w.closing {
		return
	}
	w.closing = true
	w.maybeClose()
}

func (w *Writer) maybeClose() {
	if !w.closing || w.done || w.write != nil || w.change != nil || len(w.pending) > 0 {
		return
	}
	md := w.md.Clone()
	md.State, md.LastEntryID, md.Length = StateClosed, w.lac, w.lacLength
	w.requestWrite(writeClose, md)
}

func (w *Writer) requestWrite(kind writeKind, md Metadata) {
	invariants.Assertf(w.write == nil, "ledger %d: second metadata write in flight", w.ledgerID)
	w.write = &pendingWrite{kind: kind, md: md}
	w.ready.MetadataWrite = &MetadataWrite{Metadata: md.Clone()}
}

func (w *Writer) finish(md Metadata, err error) {
	w.done = true
	w.write = nil
	if err == nil {
		w.md = md
	}
	if w.err == nil {
		w.err = ErrLedgerClosed
		if err != nil {
			w.err = err
		}
	}
	w.ready.Done = &Outcome{Err: err, Metadata: md.Clone(), LAC: w.lac}
}
