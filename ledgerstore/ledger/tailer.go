package ledger

import (
	"fmt"
	"slices"

	"keeper/ledgerstore/bkproto"
)

// DefaultLongPollMillis is the long-poll timeout a Tailer asks bookies for
// when the config leaves it zero.
const DefaultLongPollMillis = 10_000

// TailerConfig configures a Tailer.
type TailerConfig struct {
	LedgerID int64
	// Metadata is the ledger's metadata as read; keep it current with
	// HandleMetadata (a watch), and answer Ready.RefreshMetadata.
	Metadata Metadata
	// StartEntryID is the first entry to deliver.
	StartEntryID int64
	// LAC is a LAC already known (from a LACReader), or −1.
	LAC int64
	// LongPollMillis is the long-poll timeout sent to bookies (0:
	// DefaultLongPollMillis); the driver's own request timeout must exceed it.
	LongPollMillis int64
	// SpeculativeTicks, RetryTicks and MaxOutstanding tune reads as for
	// Reader and Recovery (0: defaults).
	SpeculativeTicks int
	RetryTicks       int
	MaxOutstanding   int
}

// Validate checks the metadata and the start.
func (cfg TailerConfig) Validate() error {
	if cfg.StartEntryID < 0 {
		return fmt.Errorf("ledger %d: tail from entry %d", cfg.LedgerID, cfg.StartEntryID)
	}
	return cfg.Metadata.Validate()
}

// Tailer follows a ledger as it is written (docs/bookkeeper-protocol.md §3.3): it long-polls the
// bookies of the last ensemble for the LAC, reads every entry up to the
// LAC, and delivers each entry exactly once, in order, never beyond the LAC
// (or, once the ledger is closed, beyond its last entry). It ends with
// Done after delivering the last entry of a closed ledger.
//
// Long polls are per bookie, not per round: each bookie of the last
// ensemble has at most one long poll (ENTRY_PIGGYBACK, previousLAC = the
// LAC known when it was sent) in flight. Whenever every entry up to the
// LAC is being read, every bookie without one is sent one, so the first
// answer that moves the LAC lets the tailer read on and poll again, and a
// slow or silent bookie holds back only its own poll (BookKeeper's
// ReadLastConfirmedAndEntryOp likewise completes on the first answer that
// brings an entry or a higher LAC, and leaves the slower ones behind).
// A bookie whose answer brought nothing newer than its previousLAC (an
// expired poll, or one answered at once) is polled again a tick later; one
// that answered with an error or not at all, after RetryTicks.
//
// A LAC comes only from a bookie's maxLAC or from entry header LACs, never
// from an entry id, and every such value was the LAC of a writer or the
// start of a recovery, so it never exceeds the ledger's eventual end.
// Piggybacked and read entries are delivered only after their digest
// checks out.
//
// A Tailer is not safe for concurrent use.
type Tailer struct {
	ledgerID       int64
	md             Metadata
	dec            entryDecoder
	longPollMillis int64
	speculative    int
	retryTicks     int64
	maxOutstanding int64
	now            int64

	next      int64 // next entry to deliver
	nextStart int64 // next entry to start fetching
	lac       int64 // entries up to it may be delivered
	fetches   map[int64]*fetch
	retryAt   map[int64]int64 // failed fetches, started again at this tick

	polls     map[BookieID]int64 // bookies with a long poll in flight: its previousLAC
	inflight  map[BookieID]int   // entry reads in flight to each bookie, answered or abandoned
	pollAfter map[BookieID]int64 // bookies not to be polled before this tick
	done      bool
	ready     Ready
}

// NewTailer starts tailing.
func NewTailer(cfg TailerConfig) (*Tailer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	md := cfg.Metadata.Clone()
	t := &Tailer{
		ledgerID:       cfg.LedgerID,
		md:             md,
		dec:            newEntryDecoder(cfg.LedgerID, md),
		longPollMillis: cfg.LongPollMillis,
		speculative:    cmpOr(cfg.SpeculativeTicks, DefaultSpeculativeTicks),
		retryTicks:     int64(cmpOr(cfg.RetryTicks, DefaultRetryTicks)),
		maxOutstanding: int64(cmpOr(cfg.MaxOutstanding, DefaultMaxOutstandingReads)),
		next:           cfg.StartEntryID,
		nextStart:      cfg.StartEntryID,
		lac:            max(cfg.LAC, bkproto.LastAddConfirmed),
		fetches:        map[int64]*fetch{},
		retryAt:        map[int64]int64{},
		polls:          map[BookieID]int64{},
		inflight:       map[BookieID]int{},
		pollAfter:      map[BookieID]int64{},
	}
	if t.longPollMillis <= 0 {
		t.longPollMillis = DefaultLongPollMillis
	}
	t.learnMetadata(md)
	t.pump()
	return t, nil
}

// Ready returns the work accumulated since the last call.
func (t *Tailer) Ready() Ready { return t.ready.take() }

// LAC returns the highest LAC the tailer knows.
func (t *Tailer) LAC() int64 { return t.lac }

// HandleMetadata feeds the ledger's current metadata (a watch, or the
// answer to RefreshMetadata). A closed ledger bounds the tail at its last
// entry.
func (t *Tailer) HandleMetadata(current Metadata) {
	if t.done || current.Version < t.md.Version {
		return
	}
	t.md = current.Clone()
	t.learnMetadata(t.md)
	t.pump()
}

func (t *Tailer) learnMetadata(md Metadata) {
	if md.State == StateClosed {
		t.lac = md.LastEntryID
		return
	}
	// Entries below the last ensemble were acknowledged before it was
	// installed (I3).
	t.lac = max(t.lac, md.LastSegment().FirstEntryID-1)
}

func (t *Tailer) closed() bool { return t.md.State == StateClosed }

// pump starts what can be started: fetches of entries up to the LAC,
// retries that are due, and long polls to the bookies that have none in
// flight once everything known is being read. It ends the tail after the last entry of a closed ledger.
func (t *Tailer) pump() {
	if t.done {
		return
	}
	if t.closed() && t.next > t.md.LastEntryID {
		t.done = true
		t.ready.Done = &Outcome{Metadata: t.md.Clone(), LAC: t.lac}
		return
	}
	for _, e := range sortedKeys(t.retryAt) {
		if t.retryAt[e] <= t.now {
			delete(t.retryAt, e)
			t.startFetch(e)
		}
	}
	for t.nextStart <= t.lac && t.nextStart-t.next < t.maxOutstanding {
		t.startFetch(t.nextStart)
		t.nextStart++
	}
	if !t.closed() && t.nextStart > t.lac {
		t.poll()
	}
}

// startFetch reads entry e, asking first the replicas with the fewest
// reads in flight: a slow bookie collects unanswered reads (the speculative
// reads that went around it are abandoned there), so it drops to the end
// of every write set until it catches up, as BookKeeper's read reordering
// moves bookies with many pending requests last; and it is asked nothing
// once it has a window's worth in flight (busy).
func (t *Tailer) startFetch(e int64) {
	ws := t.md.WriteSetBookies(e)
	slices.SortStableFunc(ws, func(a, b BookieID) int { return t.inflight[a] - t.inflight[b] })
	f := newFetch(e, ws)
	f.busy = t.busy
	t.fetches[e] = f
	f.askNext(t.emit, false)
}

// busy reports a bookie with as many entry reads in flight as the whole
// read window: it is asked nothing more until some are answered (or, if it
// is silent, until the driver gives up on them).
func (t *Tailer) busy(b BookieID) bool { return int64(t.inflight[b]) >= t.maxOutstanding }

func (t *Tailer) emit(b BookieID, entryID int64, speculative bool) {
	t.inflight[b]++
	t.ready.Reads = append(t.ready.Reads, ReadRequest{Bookie: b, Kind: ReadEntry, LedgerID: t.ledgerID, EntryID: entryID,
		Speculative: speculative})
}

// poll sends a long poll to every bookie of the last ensemble that has
// none in flight and is not being held back.
func (t *Tailer) poll() {
	for _, b := range t.md.LastSegment().Bookies {
		if _, busy := t.polls[b]; busy || t.now < t.pollAfter[b] {
			continue
		}
		t.polls[b] = t.lac
		t.ready.Reads = append(t.ready.Reads, ReadRequest{
			Bookie:        b,
			Kind:          ReadEntry,
			LedgerID:      t.ledgerID,
			EntryID:       bkproto.LastAddConfirmed,
			LongPoll:      true,
			PreviousLAC:   t.lac,
			TimeoutMillis: t.longPollMillis,
			Piggyback:     true,
		})
	}
}

// HandleRead feeds a bookie's answer to a long poll or an entry read.
func (t *Tailer) HandleRead(req ReadRequest, reply ReadReply) {
	if t.done {
		return
	}
	if req.LongPoll {
		t.handlePoll(req, reply)
	} else {
		t.handleEntry(req, reply)
	}
	t.deliver()
	t.pump()
}

// handleEntry takes the answer to an entry read.
func (t *Tailer) handleEntry(req ReadRequest, reply ReadReply) {
	if t.inflight[req.Bookie]--; t.inflight[req.Bookie] <= 0 {
		delete(t.inflight, req.Bookie)
	}
	f := t.fetches[req.EntryID]
	if f == nil {
		return // an abandoned read of an entry already read
	}
	if i := f.outstanding(req.Bookie); i >= 0 && f.reply(i, reply, t.dec.decode, t.emit, &t.ready.Stats) {
		// Every replica failed: the metadata may be stale (the entry
		// is in a segment this copy does not have). Refresh and retry.
		delete(t.fetches, req.EntryID)
		t.retryAt[req.EntryID] = t.now + t.retryTicks
		t.ready.RefreshMetadata = true
	}
}

// handlePoll learns the LAC from a long-poll answer: the bookie's maxLAC,
// and the header LAC of the entry it carries. A piggybacked entry
// PreviousLAC+1 is kept as that entry's read if the new LAC covers it.
// The bookie may be polled again at once if the answer brought a LAC above
// the poll's previousLAC; otherwise it is held back (see Tailer).
func (t *Tailer) handlePoll(req ReadRequest, reply ReadReply) {
	prev, ok := t.polls[req.Bookie]
	if !ok || prev != req.PreviousLAC {
		return
	}
	delete(t.polls, req.Bookie)
	if reply.Status != bkproto.StatusCode_EOK {
		// A bookie that holds nothing of the ledger answers NoSuchLedger
		// at once; polling it again at once would spin.
		t.pollAfter[req.Bookie] = t.now + t.retryTicks
		return
	}
	learned := bkproto.LastAddConfirmed
	if reply.HasMaxLAC {
		learned = reply.MaxLAC
	}
	if len(reply.Body) > 0 {
		if e, err := t.dec.decode(reply.Body, bkproto.LastAddConfirmed); err == nil {
			learned = max(learned, e.LAC)
			t.lac = max(t.lac, t.bounded(learned))
			t.piggyback(e)
		}
	}
	t.lac = max(t.lac, t.bounded(learned))
	if learned > prev {
		delete(t.pollAfter, req.Bookie)
	} else {
		// Nothing newer: the poll expired, or the bookie answers at once
		// (a fenced ledger): wait a tick.
		t.pollAfter[req.Bookie] = t.now + 1
	}
}

// bounded caps a LAC at a closed ledger's last entry.
func (t *Tailer) bounded(lac int64) int64 {
	if t.closed() {
		return min(lac, t.md.LastEntryID)
	}
	return lac
}

// piggyback uses an entry that came with a long poll as the read of that
// entry, if it is the next one to fetch and within the LAC.
func (t *Tailer) piggyback(e bkproto.Entry) {
	if e.EntryID != t.nextStart || e.EntryID > t.lac || e.EntryID-t.next >= t.maxOutstanding {
		return
	}
	f := newFetch(e.EntryID, nil)
	f.entry = &Entry{EntryID: e.EntryID, Length: e.Length, Payload: e.Payload}
	t.fetches[e.EntryID] = f
	t.nextStart++
}

func (t *Tailer) deliver() {
	for {
		f := t.fetches[t.next]
		if f == nil || f.entry == nil {
			return
		}
		t.ready.Entries = append(t.ready.Entries, *f.entry)
		delete(t.fetches, t.next)
		t.next++
	}
}

// Tick advances the tailer's clock by one tick: speculative reads,
// retries, and delayed poll rounds.
func (t *Tailer) Tick() {
	t.now++
	if t.done {
		return
	}
	for _, e := range sortedKeys(t.fetches) {
		t.fetches[e].tick(t.speculative, t.emit)
	}
	t.pump()
}
