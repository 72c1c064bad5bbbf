package ledgerclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// Entry is one entry a reader returns: its id, the ledger's cumulative
// payload bytes up to it, and its payload.
type Entry = ledger.Entry

// ReadHandle reads a ledger: a closed one up to its last entry, an open
// one up to the LAC it has learned (docs/bookkeeper-protocol.md §3). It is safe for concurrent
// use. Each Read, ReadLAC and Tail drives a state machine of its own on
// the calling goroutine; the handle holds no goroutine between calls.
type ReadHandle struct {
	c  *Client
	id int64

	mu      sync.Mutex // guards below
	md      ledger.Metadata
	stored  ledger.Metadata
	storedV metadata.Version
	lac     int64 // highest LAC learned; entries up to it may be read
}

// Open opens a ledger with recovery (docs/bookkeeper-protocol.md §4.1), as a new owner does: it
// marks the metadata IN_RECOVERY, fences the last ensemble (every recovery
// read carries the fence flag), finds the LAC, reads forward and re-adds
// what it finds with RECOVERY_ADD, and closes the ledger with a
// compare-and-set. Afterwards the old writer can acknowledge nothing more.
// A ledger already closed is just opened. Recovery keeps asking bookies
// whose answers are unknown; ctx bounds it, and a recovery cut short may
// be started again.
func (c *Client) Open(ctx context.Context, id int64, password []byte) (_ *ReadHandle, err error) {
	start := time.Now()
	defer func() { c.record(ledgerOpen, start, err) }()
	md, smd, err := c.openMetadata(ctx, id, password)
	if err != nil {
		return nil, err
	}
	if md.State == ledger.StateClosed {
		return c.handle(id, md, smd), nil
	}
	bookies, err := c.bookies(ctx, false)
	if err != nil {
		return nil, err
	}
	rec, err := ledger.NewRecovery(ledger.RecoveryConfig{LedgerID: id, Metadata: md, Bookies: bookies,
		Rand: c.newRand(), Policy: c.cfg.Placement, RetryTicks: c.cfg.ticks(c.cfg.RetryInterval),
		ReadAheadEntries: c.cfg.RecoveryReadBatchSize, BatchReadMaxSize: c.batchReadMaxSize(), Logger: c.log})
	if err != nil {
		return nil, err
	}
	d, err := c.newDriver(ctx, id, rec, smd, metadata.Version(md.Version))
	if err != nil {
		return nil, err
	}
	var out *ledger.Outcome
	d.deliver = func(rd *ledger.Ready) bool {
		out = rd.Done
		return out != nil
	}
	recovering := time.Now()
	err = d.run()
	if err == nil {
		err = out.Err
	}
	c.record(ledgerRecover, recovering, err)
	c.recordRecovery(out, err == nil)
	if err != nil {
		return nil, fmt.Errorf("ledgerclient: recover ledger %d: %w", id, err)
	}
	return c.handle(id, out.Metadata, d.stored), nil
}

// batchReadMaxSize is the size bound of batch reads (recovery's and
// Read's): batches
// only over v2 (BATCH_READ_ENTRY has no v3 form), each within the frame
// limit, as BookKeeper's client caps maxSize by its frame size.
func (c *Client) batchReadMaxSize() int64 {
	if !c.cfg.UseV2WireProtocol {
		return 0
	}
	return bkproto.DefaultMaxFrameBytes
}

// OpenNoRecovery opens a ledger for reading without disturbing its
// writer: an open ledger stays open and can be read up to its LAC, which
// ReadLAC and Tail learn as the writer goes on.
func (c *Client) OpenNoRecovery(ctx context.Context, id int64, password []byte) (_ *ReadHandle, err error) {
	start := time.Now()
	defer func() { c.record(ledgerOpen, start, err) }()
	md, smd, err := c.openMetadata(ctx, id, password)
	if err != nil {
		return nil, err
	}
	return c.handle(id, md, smd), nil
}

// openMetadata reads a ledger's metadata and checks the password, as the
// Java client does before contacting any bookie.
func (c *Client) openMetadata(ctx context.Context, id int64, password []byte) (ledger.Metadata, ledger.Metadata, error) {
	md, smd, err := c.readLedger(ctx, id)
	if err != nil {
		return md, smd, err
	}
	if !bytes.Equal(md.Password, password) {
		return md, smd, fmt.Errorf("ledgerclient: open ledger %d: wrong password: %w", id, ErrUnauthorized)
	}
	return md, smd, nil
}

func (c *Client) handle(id int64, md ledger.Metadata, smd ledger.Metadata) *ReadHandle {
	h := &ReadHandle{c: c, id: id, lac: -1} // nothing is confirmed until learned
	h.learn(md, smd)
	return h
}

// learn adopts newer metadata.
func (h *ReadHandle) learn(md ledger.Metadata, smd ledger.Metadata) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.md, h.stored, h.storedV = md, smd, metadata.Version(md.Version)
	if md.State == ledger.StateClosed {
		h.lac = md.LastEntryID
		return
	}
	// A segment starting at F was made by a writer whose LAC was F-1.
	h.lac = max(h.lac, md.LastSegment().FirstEntryID-1)
}

// learnLAC raises the handle's LAC to lac, counting a LAC update hit
// when it moved and a miss when it did not.
func (h *ReadHandle) learnLAC(lac int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.md.State == ledger.StateClosed {
		return
	}
	if lac > h.lac {
		h.lac = lac
		h.c.count(lacUpdateHits)
	} else {
		h.c.count(lacUpdateMisses)
	}
}

func (h *ReadHandle) snapshot() (ledger.Metadata, ledger.Metadata, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.md.Clone(), h.stored, h.lac
}

// ID returns the ledger id.
func (h *ReadHandle) ID() int64 { return h.id }

// Metadata returns the ledger's metadata as last read.
func (h *ReadHandle) Metadata() ledger.Metadata {
	md, _, _ := h.snapshot()
	return md
}

// LAC returns the highest entry known readable: the last entry of a
// closed ledger, or the LAC learned so far of an open one (-1: none).
func (h *ReadHandle) LAC() int64 {
	_, _, lac := h.snapshot()
	return lac
}

// Closed reports whether the ledger was closed when its metadata was last
// read.
func (h *ReadHandle) Closed() bool {
	md, _, _ := h.snapshot()
	return md.State == ledger.StateClosed
}

// refresh reads the metadata again.
func (h *ReadHandle) refresh(ctx context.Context) error {
	md, smd, err := h.c.readLedger(ctx, h.id)
	if err != nil {
		return err
	}
	h.learn(md, smd)
	return nil
}

// ReadLAC learns the LAC of an open ledger from the bookies of its last
// ensemble (docs/bookkeeper-protocol.md §3.3: the maximum of their explicit LACs and of the
// header LACs of their last entries, once they cover the ensemble). For a
// closed ledger it is the last entry. It re-reads the metadata first, so
// an ensemble change or a close is seen.
func (h *ReadHandle) ReadLAC(ctx context.Context) (_ int64, err error) {
	start := time.Now()
	defer func() { h.c.record(readLAC, start, err) }()
	if h.Closed() {
		return h.LAC(), nil
	}
	if err := h.refresh(ctx); err != nil {
		return -1, err
	}
	md, smd, _ := h.snapshot()
	if md.State == ledger.StateClosed {
		return md.LastEntryID, nil
	}
	r, err := ledger.NewLACReader(ledger.LACReaderConfig{LedgerID: h.id, Metadata: md,
		RetryTicks: h.c.cfg.ticks(h.c.cfg.RetryInterval)})
	if err != nil {
		return -1, err
	}
	out, err := h.drive(ctx, r, smd, md, nil)
	if err != nil {
		return -1, err
	}
	h.learnLAC(out.LAC)
	return h.LAC(), nil
}

// Read returns entries first..last, each verified against its digest. For
// an open ledger, last must not be above the LAC (it is learned again once
// if the handle's is too low): entries above it may still be dropped by
// recovery, so they are never served (ledger.ErrReadBeyondLAC). Each
// entry is read from one replica, a second one being asked after
// SpeculativeReadTimeout or at once after an error.
func (h *ReadHandle) Read(ctx context.Context, first, last int64) (_ []Entry, err error) {
	start := time.Now()
	defer func() { h.c.record(readEntry, start, err) }()
	if err := h.checkBound(ctx, last); err != nil {
		return nil, err
	}
	var entries []Entry
	refreshed := false
	for {
		md, smd, lac := h.snapshot()
		r, err := ledger.NewReader(ledger.ReaderConfig{LedgerID: h.id, Metadata: md, LAC: lac, First: first, Last: last,
			SpeculativeTicks: h.c.cfg.ticks(h.c.cfg.SpeculativeReadTimeout), BatchReadMaxSize: h.c.batchReadMaxSize()})
		if err != nil {
			return entries, err
		}
		out, err := h.drive(ctx, r, smd, md, func(e []Entry) { entries = append(entries, e...) })
		if err == nil {
			err = out.Err
		}
		// An open ledger's entries may sit in a segment this copy of the
		// metadata does not have yet: look again once.
		if errors.Is(err, ledger.ErrEntryUnavailable) && md.State != ledger.StateClosed && !refreshed {
			refreshed = true
			if rerr := h.refresh(ctx); rerr == nil {
				first = out.LAC + 1
				continue
			}
		}
		return entries, err
	}
}

// checkBound makes sure last is readable, learning the LAC once if needed.
func (h *ReadHandle) checkBound(ctx context.Context, last int64) error {
	if last <= h.LAC() || h.Closed() {
		return nil // a closed ledger's bound is checked by the Reader
	}
	lac, err := h.ReadLAC(ctx)
	if err != nil {
		return err
	}
	if last > lac {
		return fmt.Errorf("%w: ledger %d: read up to %d, LAC %d", ledger.ErrReadBeyondLAC, h.id, last, lac)
	}
	return nil
}

// drive runs a reading machine on the calling goroutine until it is done,
// passing its entries to got.
func (h *ReadHandle) drive(ctx context.Context, m stateMachine, smd ledger.Metadata, md ledger.Metadata,
	got func([]Entry)) (ledger.Outcome, error) {
	d, err := h.c.newDriver(ctx, h.id, m, smd, metadata.Version(md.Version))
	if err != nil {
		return ledger.Outcome{}, err
	}
	var out ledger.Outcome
	d.deliver = func(rd *ledger.Ready) bool {
		if len(rd.Entries) > 0 && got != nil {
			got(rd.Entries)
		}
		if rd.Done != nil {
			out = *rd.Done
			return true
		}
		return false
	}
	if err := d.run(); err != nil {
		return ledger.Outcome{}, fmt.Errorf("ledgerclient: ledger %d: %w", h.id, err)
	}
	return out, nil
}
