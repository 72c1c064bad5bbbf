package ledger

import (
	"fmt"

	"keeper/ledgerstore/bkproto"
)

// ReaderConfig configures a Reader.
type ReaderConfig struct {
	LedgerID int64
	// Metadata is the ledger's metadata, as read.
	Metadata Metadata
	// LAC bounds the read of an open ledger: the LAC learned from a
	// LACReader, a Tailer or the ledger's writer. Ignored for a closed
	// ledger, where the bound is LastEntryID.
	LAC int64
	// First and Last are the entries to read, inclusive.
	First, Last int64
	// SpeculativeTicks (0: DefaultSpeculativeTicks) and MaxOutstanding
	// (0: DefaultMaxOutstandingReads) tune the reads.
	SpeculativeTicks int
	MaxOutstanding   int
	// BatchReadMaxSize, when positive, reads in batches (v2
	// BATCH_READ_ENTRY, at most this many bytes each) if every bookie holds
	// every entry (E = Qw), as BookKeeper's client does; the driver must
	// speak v2. A batch that gets no answer, or one a bookie does not
	// understand, turns batching off for the rest of the read.
	BatchReadMaxSize int64
}

// Validate checks the metadata and the range: First..Last must be a
// non-empty range of entry ids at or below the bound (ErrReadBeyondLAC).
func (cfg ReaderConfig) Validate() error {
	if err := cfg.Metadata.Validate(); err != nil {
		return err
	}
	bound := cfg.LAC
	if cfg.Metadata.State == StateClosed {
		bound = cfg.Metadata.LastEntryID
	}
	switch {
	case cfg.First < 0 || cfg.Last < cfg.First:
		return fmt.Errorf("ledger %d: bad read range %d..%d", cfg.LedgerID, cfg.First, cfg.Last)
	case cfg.Last > bound:
		return fmt.Errorf("%w: ledger %d: read up to %d, bound %d", ErrReadBeyondLAC, cfg.LedgerID, cfg.Last, bound)
	}
	return nil
}

// Reader reads entries First..Last of a ledger (docs/bookkeeper-protocol.md §3.2), never beyond
// the LAC of an open ledger or the last entry of a closed one. It delivers
// the entries in order, each once, and ends with Done: nil after Last, or
// ErrEntryUnavailable when no replica of an entry returned a valid copy
// (the entries before it have been delivered).
//
// A Reader is not safe for concurrent use.
type Reader struct {
	ledgerID       int64
	md             Metadata
	dec            entryDecoder
	speculative    int
	maxOutstanding int64
	next           int64 // next entry to deliver
	nextStart      int64 // next entry to start fetching
	last           int64
	fetches        map[int64]*fetch
	batchMaxSize   int64 // BatchReadMaxSize; 0 once batches are off
	done           bool
	ready          Ready
}

// NewReader starts a read. It returns ErrReadBeyondLAC if Last is above
// the bound, and an error for an empty or negative range.
func NewReader(cfg ReaderConfig) (*Reader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	md := cfg.Metadata.Clone()
	r := &Reader{
		ledgerID:       cfg.LedgerID,
		md:             md,
		dec:            newEntryDecoder(cfg.LedgerID, md),
		speculative:    cmpOr(cfg.SpeculativeTicks, DefaultSpeculativeTicks),
		maxOutstanding: int64(cmpOr(cfg.MaxOutstanding, DefaultMaxOutstandingReads)),
		next:           cfg.First,
		nextStart:      cfg.First,
		last:           cfg.Last,
		fetches:        map[int64]*fetch{},
		batchMaxSize:   cfg.BatchReadMaxSize,
	}
	r.startFetches()
	return r, nil
}

// Ready returns the work accumulated since the last call.
func (r *Reader) Ready() Ready { return r.ready.take() }

func (r *Reader) emit(b BookieID, entryID int64, speculative bool) {
	r.ready.Reads = append(r.ready.Reads, ReadRequest{Bookie: b, Kind: ReadEntry, LedgerID: r.ledgerID, EntryID: entryID,
		Speculative: speculative})
}

func (r *Reader) startFetches() {
	if r.batchMaxSize > 0 && r.md.Placement().EnsembleSize == r.md.Placement().WriteQuorum {
		r.startBatch()
		return
	}
	for r.nextStart <= r.last && r.nextStart-r.next < r.maxOutstanding {
		f := newFetch(r.nextStart, r.md.WriteSetBookies(r.nextStart))
		r.fetches[r.nextStart] = f
		r.nextStart++
		f.askNext(r.emit, false)
	}
}

// HandleRead feeds a bookie's answer to one of the reader's reads.
func (r *Reader) HandleRead(req ReadRequest, reply ReadReply) {
	if req.BatchMaxCount > 0 {
		if !r.done {
			r.handleBatch(req, reply)
		}
		return
	}
	f := r.fetches[req.EntryID]
	if r.done || f == nil {
		return
	}
	i := f.outstanding(req.Bookie)
	if i < 0 {
		return
	}
	if f.reply(i, reply, r.dec.decode, r.emit, &r.ready.Stats) {
		r.finish(fmt.Errorf("%w: ledger %d entry %d from %v", ErrEntryUnavailable, r.ledgerID, f.entryID, f.bookies))
		return
	}
	r.deliver()
}

// Tick advances the reader's clock by one tick (speculative reads).
func (r *Reader) Tick() {
	if r.done {
		return
	}
	for _, e := range sortedKeys(r.fetches) {
		r.fetches[e].tick(r.speculative, r.emit)
	}
}

func (r *Reader) deliver() {
	for {
		f := r.fetches[r.next]
		if f == nil || f.entry == nil {
			break
		}
		r.ready.Entries = append(r.ready.Entries, *f.entry)
		delete(r.fetches, r.next)
		r.next++
	}
	if r.next > r.last {
		r.finish(nil)
		return
	}
	r.startFetches()
}

func (r *Reader) finish(err error) {
	r.done = true
	r.fetches = nil
	r.ready.Done = &Outcome{Err: err, LAC: r.next - 1}
}

// LACReaderConfig configures a LACReader.
type LACReaderConfig struct {
	LedgerID   int64
	Metadata   Metadata
	RetryTicks int // 0: DefaultRetryTicks
}

// Validate checks the metadata.
func (cfg LACReaderConfig) Validate() error { return cfg.Metadata.Validate() }

// LACReader learns an open ledger's LAC without fencing (docs/bookkeeper-protocol.md §3.3):
// READ_LAC to every bookie of the last ensemble, and once the answers
// cover the ensemble, the greatest of their explicit LACs and the header
// LACs of their last entries, floored at the first entry of the last
// ensemble − 1. Unknown answers are asked again after RetryTicks. For a
// closed ledger the LAC is its last entry, with no reads. Done.LAC holds
// the result.
type LACReader struct {
	ledgerID   int64
	md         Metadata
	dec        entryDecoder
	retryTicks int64
	now        int64
	q          *quorumRead
	maxLAC     int64
	done       bool
	ready      Ready
}

// NewLACReader starts a LAC read.
func NewLACReader(cfg LACReaderConfig) (*LACReader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	md := cfg.Metadata.Clone()
	r := &LACReader{
		ledgerID:   cfg.LedgerID,
		md:         md,
		dec:        newEntryDecoder(cfg.LedgerID, md),
		retryTicks: int64(cmpOr(cfg.RetryTicks, DefaultRetryTicks)),
		maxLAC:     bkproto.LastAddConfirmed,
	}
	if md.State == StateClosed {
		r.finish(md.LastEntryID)
		return r, nil
	}
	r.q = newQuorumRead(bkproto.LastAddConfirmed, md.LastSegment().Bookies)
	for _, b := range r.q.bookies {
		r.emit(b)
	}
	return r, nil
}

// Ready returns the work accumulated since the last call.
func (r *LACReader) Ready() Ready { return r.ready.take() }

func (r *LACReader) emit(b BookieID) {
	r.ready.Reads = append(r.ready.Reads, ReadRequest{Bookie: b, Kind: ReadLAC, LedgerID: r.ledgerID,
		EntryID: bkproto.LastAddConfirmed})
}

// HandleRead feeds a bookie's answer to a READ_LAC.
func (r *LACReader) HandleRead(req ReadRequest, reply ReadReply) {
	if r.done {
		return
	}
	i := r.q.outstanding(req.Bookie)
	if i < 0 {
		return
	}
	switch {
	case reply.Status == bkproto.StatusCode_EOK:
		lac, ok := r.lacOf(reply)
		if !ok {
			r.q.unknown(i, r.now+r.retryTicks)
			return
		}
		r.q.valid(i)
		r.maxLAC = max(r.maxLAC, lac)
	case isNegative(reply.Status):
		r.q.valid(i)
	default:
		r.q.unknown(i, r.now+r.retryTicks)
		return
	}
	if r.md.Placement().EnsembleCovered(r.q.definitive()) {
		r.finish(max(r.maxLAC, r.md.LastSegment().FirstEntryID-1))
	}
}

// lacOf returns the greatest LAC a READ_LAC answer carries: the explicit
// LAC and the header LAC of the last entry. ok is false if a body is
// present but fails verification.
func (r *LACReader) lacOf(reply ReadReply) (lac int64, ok bool) {
	lac = bkproto.LastAddConfirmed
	if len(reply.LACBody) > 0 {
		l, err := bkproto.DecodeLAC(reply.LACBody, r.dec.digestType, r.dec.macKey, r.ledgerID)
		if err != nil {
			return 0, false
		}
		lac = max(lac, l)
	}
	if len(reply.Body) > 0 {
		e, err := r.dec.decode(reply.Body, bkproto.LastAddConfirmed)
		if err != nil {
			return 0, false
		}
		lac = max(lac, e.LAC)
	}
	return lac, true
}

// Tick advances the reader's clock by one tick (retries).
func (r *LACReader) Tick() {
	r.now++
	if r.done {
		return
	}
	for _, i := range r.q.due(r.now) {
		r.emit(r.q.bookies[i])
	}
}

func (r *LACReader) finish(lac int64) {
	r.done = true
	r.ready.Done = &Outcome{LAC: lac, Metadata: r.md.Clone()}
}
