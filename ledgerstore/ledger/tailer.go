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
// Each poll round sends one long poll (ENTRY_PIGGYBACK, previousLAC = the
// known LAC) to every bookie of the last ensemble; a new round starts once
// the round is over and every entry up to the LAC is being read. A LAC
// comes only from a bookie's maxLAC or from entry header LACs, never from
// an entry id, and every such value was the LAC of a writer or the start
// of a recovery, so it never exceeds the ledger's eventual end.
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

	polling    []BookieID // long polls in flight
	pollGotOK  bool       // the current round had an EOK answer
	nextPollAt int64      // a round with no answer delays the next one
	done       bool
	ready      Ready
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
// retries that are due, and a new poll round when everything known is
// being read. It ends the tail after the last entry of a closed ledger.
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
	if !t.closed() && len(t.polling) == 0 && t.nextStart > t.lac && t.now >= t.nextPollAt {
		t.startPoll()
	}
}

func (t *Tailer) startFetch(e int64) {
	f := newFetch(e, t.md.WriteSetBookies(e))
	t.fetches[e] = f
	f.askNext(t.emit, false)
}

func (t *Tailer) emit(b BookieID, entryID int64, speculative bool) {
	t.ready.Reads = append(t.ready.Reads, ReadRequest{Bookie: b, Kind: ReadEntry, LedgerID: t.ledgerID, EntryID: entryID,
		Speculative: speculative})
}

// startPoll sends one long poll to every bookie of the last ensemble.
func (t *Tailer) startPoll() {
	t.polling = slices.Clone(t.md.LastSegment().Bookies)
	t.pollGotOK = false
	for _, b := range t.polling {
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
	} else if f := t.fetches[req.EntryID]; f != nil {
		if i := f.outstanding(req.Bookie); i >= 0 && f.reply(i, reply, t.dec.decode, t.emit) {
			// Every replica failed: the metadata may be stale (the entry
			// is in a segment this copy does not have). Refresh and retry.
			delete(t.fetches, req.EntryID)
			t.retryAt[req.EntryID] = t.now + t.retryTicks
			t.ready.RefreshMetadata = true
		}
	}
	t.deliver()
	t.pump()
}

// handlePoll learns the LAC from a long-poll answer: the bookie's maxLAC,
// and the header LAC of the entry it carries. A piggybacked entry
// PreviousLAC+1 is kept as that entry's read if the new LAC covers it.
func (t *Tailer) handlePoll(req ReadRequest, reply ReadReply) {
	i := slices.Index(t.polling, req.Bookie)
	if i < 0 {
		return
	}
	t.polling = slices.Delete(t.polling, i, i+1)
	if reply.Status == bkproto.StatusCode_EOK {
		// Only an EOK answer waited for the LAC. A bookie that holds
		// nothing of the ledger answers NoSuchLedger at once; polling it
		// again at once would spin.
		t.pollGotOK = true
		if reply.HasMaxLAC {
			t.lac = max(t.lac, t.bounded(reply.MaxLAC))
		}
		if len(reply.Body) > 0 {
			if e, err := t.dec.decode(reply.Body, bkproto.LastAddConfirmed); err == nil {
				t.lac = max(t.lac, t.bounded(e.LAC))
				t.piggyback(e)
			}
		}
	}
	if len(t.polling) == 0 && !t.pollGotOK {
		t.nextPollAt = t.now + t.retryTicks
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
