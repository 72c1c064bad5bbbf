package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"keeper/ledgerstore/bkproto"
)

// history is what the clients observed, for the checkers:
//   - no acknowledged entry is lost: every acked entry is ≤ the closed
//     ledger's last entry and reads back with its payload;
//   - readers never see past the LAC: every entry a tailer or reader
//     delivers was acknowledged to the writer, or is within the closed end;
//   - a closed ledger's last entry never changes: every client that saw
//     the ledger closed saw the same end, and the store refuses changes;
//   - the old writer is fenced: it never gets an ack beyond the closed end;
//   - entry order equals write order: completions and deliveries are
//     consecutive and increasing, each entry once.
type history struct {
	payloads       map[int64][]byte // what the writer appended, by entry id
	nextCompletion int64
	acked          map[int64]bool
	maxAcked       int64
	failed         map[int64]error
	tailers        map[string]*int64 // next entry each tailer must deliver
	closes         []closeSeen
}

type closeSeen struct {
	who  string
	last int64
}

func newHistory() *history {
	return &history{payloads: map[int64][]byte{}, acked: map[int64]bool{}, failed: map[int64]error{},
		tailers: map[string]*int64{}, maxAcked: -1}
}

// simWriter is the application writing through a Writer.
type simWriter struct {
	s *sim
	c *simClient
	w *Writer
}

// createLedger stores new metadata on a random ensemble and starts its
// writer.
func (s *sim) createLedger(e, qw, qa int, digest bkproto.DigestType) *simWriter {
	ensemble, err := ChooseBookies(e, s.candidates(), nil, s.rng)
	if err != nil {
		s.tb.Fatal(err)
	}
	return s.createLedgerOn(ensemble, qw, qa, digest)
}

// createLedgerOn is createLedger on a given ensemble.
func (s *sim) createLedgerOn(ensemble []BookieID, qw, qa int, digest bkproto.DigestType) *simWriter {
	e := len(ensemble)
	md, err := NewMetadata(CreateConfig{EnsembleSize: e, WriteQuorum: qw, AckQuorum: qa, DigestType: digest,
		Password: []byte("secret")}, ensemble)
	if err != nil {
		s.tb.Fatal(err)
	}
	md.Version = 1
	s.store.md = md
	w, err := NewWriter(WriterConfig{LedgerID: simLedgerID, Metadata: md, Bookies: s.candidates(),
		Rand: rand.New(rand.NewPCG(s.seed, 2))})
	if err != nil {
		s.tb.Fatal(err)
	}
	sw := &simWriter{s: s, w: w}
	sw.c = s.addClient("writer", w, sw.onReady)
	s.tracef("created ledger E=%d Qw=%d Qa=%d on %v", e, qw, qa, ensemble)
	return sw
}

// append adds n entries with random payloads; it reports whether all were
// taken.
func (sw *simWriter) append(n int) bool {
	if sw.c.dead || sw.c.done != nil {
		return false
	}
	for range n {
		p := []byte(fmt.Sprintf("s%d-%d-%s", sw.s.seed, sw.w.LastAddPushed()+1, strings.Repeat("x", sw.s.rng.IntN(20))))
		id, err := sw.w.Append(p)
		if err != nil {
			sw.c.flush()
			return false
		}
		sw.s.h.payloads[id] = p
	}
	sw.c.flush()
	return true
}

func (sw *simWriter) onReady(rd Ready) {
	s, h := sw.s, sw.s.h
	for _, c := range rd.Completions {
		if c.EntryID != h.nextCompletion {
			s.violate("writer completed entry %d, expected %d next (completions out of order, pitfall 4)", c.EntryID, h.nextCompletion)
		}
		h.nextCompletion = c.EntryID + 1
		if c.Err != nil {
			h.failed[c.EntryID] = c.Err
			continue
		}
		h.acked[c.EntryID], h.maxAcked = true, max(h.maxAcked, c.EntryID)
		if md := s.store.md; md.State == StateClosed && c.EntryID > md.LastEntryID {
			s.violate("writer acknowledged entry %d after the ledger closed at %d: the old writer is not fenced",
				c.EntryID, md.LastEntryID)
		}
	}
	if d := rd.Done; d != nil && d.Err == nil {
		h.closes = append(h.closes, closeSeen{"writer", d.Metadata.LastEntryID})
	}
}

// startRecovery starts a client opening the ledger with recovery, from
// the metadata as stored now.
func (s *sim) startRecovery(name string) *simClient {
	r, err := NewRecovery(RecoveryConfig{LedgerID: simLedgerID, Metadata: s.store.read(), Bookies: s.candidates(),
		Rand: rand.New(rand.NewPCG(s.seed, uint64(len(s.clients)))), RetryTicks: simRetryTicks,
		ReadAheadEntries: 1 + s.rng.IntN(3)})
	if err != nil {
		s.tb.Fatal(err)
	}
	s.tracef("%s starts", name)
	return s.addClient(name, r, func(rd Ready) {
		if d := rd.Done; d != nil && d.Err == nil {
			s.h.closes = append(s.h.closes, closeSeen{name, d.Metadata.LastEntryID})
		}
	})
}

// checkDelivered checks one entry a reader or tailer delivered: its payload
// is the writer's, and it was acknowledged or lies within the closed end.
func (s *sim) checkDelivered(who string, e Entry) {
	p, ok := s.h.payloads[e.EntryID]
	switch {
	case !ok:
		s.violate("%s delivered entry %d, which the writer never appended", who, e.EntryID)
	case !bytes.Equal(p, e.Payload):
		s.violate("%s delivered entry %d = %q, written as %q", who, e.EntryID, e.Payload, p)
	}
	md := s.store.md
	if !s.h.acked[e.EntryID] && !(md.State == StateClosed && e.EntryID <= md.LastEntryID) {
		s.violate("%s delivered entry %d, which is neither acknowledged nor within a closed ledger: it read past the LAC",
			who, e.EntryID)
	}
}

// startTailer starts a tailing reader from entry 0.
func (s *sim) startTailer(name string) *simClient {
	t, err := NewTailer(TailerConfig{LedgerID: simLedgerID, Metadata: s.store.read(), LAC: -1,
		LongPollMillis: simPollMillis, SpeculativeTicks: simSpecTicks, RetryTicks: simRetryTicks})
	if err != nil {
		s.tb.Fatal(err)
	}
	next := new(int64)
	s.h.tailers[name] = next
	c := s.addClient(name, t, func(rd Ready) {
		for _, e := range rd.Entries {
			if e.EntryID != *next {
				s.violate("%s delivered entry %d, expected %d (exactly once, in order)", name, e.EntryID, *next)
			}
			*next = e.EntryID + 1
			s.checkDelivered(name, e)
		}
	})
	c.watch = true
	return c
}

// startLACRead learns the LAC without fencing, then reads every entry up
// to it.
func (s *sim) startLACRead(name string) {
	lr, err := NewLACReader(LACReaderConfig{LedgerID: simLedgerID, Metadata: s.store.read(), RetryTicks: simRetryTicks})
	if err != nil {
		s.tb.Fatal(err)
	}
	s.addClient(name, lr, func(rd Ready) {
		if rd.Done == nil || rd.Done.LAC < 0 {
			return
		}
		lac := rd.Done.LAC
		if !s.h.acked[lac] && !(s.store.md.State == StateClosed && lac <= s.store.md.LastEntryID) {
			s.violate("%s learned LAC %d, which was never acknowledged", name, lac)
		}
		s.startReader(name+"-read", rd.Done.Metadata, lac)
	})
}

func (s *sim) startReader(name string, md Metadata, last int64) *simClient {
	r, err := NewReader(ReaderConfig{LedgerID: simLedgerID, Metadata: md, LAC: last, First: 0, Last: last,
		SpeculativeTicks: simSpecTicks})
	if err != nil {
		s.violate("%s: %v", name, err)
		return nil
	}
	next := int64(0)
	return s.addClient(name, r, func(rd Ready) {
		for _, e := range rd.Entries {
			if e.EntryID != next {
				s.violate("%s delivered entry %d, expected %d", name, e.EntryID, next)
			}
			next = e.EntryID + 1
			s.checkDelivered(name, e)
		}
	})
}

// finish heals every fault, makes sure the ledger ends closed (recovering
// it if nobody closed it), lets the tailers catch up, reads the ledger back
// and checks the history. It fails the test on any violation.
func (s *sim) finish(replay string) {
	s.heal()
	s.run(100, nil)
	for attempt := 0; s.store.md.State != StateClosed && attempt < 4; attempt++ {
		c := s.startRecovery(fmt.Sprintf("final-recovery-%d", attempt))
		if !s.run(4000, func() bool { return c.done != nil }) {
			s.violate("final recovery did not finish after every fault healed")
			break
		}
	}
	closed := s.store.read()
	if closed.State != StateClosed {
		s.violate("ledger not closed at the end: %v", closed.State)
		s.report(replay)
		return
	}
	s.run(2000, func() bool { return s.tailersDone(closed.LastEntryID) })
	for name, next := range s.h.tailers {
		if *next != closed.LastEntryID+1 {
			s.violate("%s stopped at entry %d; the ledger ends at %d", name, *next, closed.LastEntryID)
		}
	}
	s.checkClosed(closed)
	s.report(replay)
}

func (s *sim) tailersDone(last int64) bool {
	for _, next := range s.h.tailers {
		if *next != last+1 {
			return false
		}
	}
	return true
}

// checkClosed reads the closed ledger back and checks what the writer and
// the recoveries observed against it.
func (s *sim) checkClosed(closed Metadata) {
	last := closed.LastEntryID
	for id := range s.h.acked {
		if id > last {
			s.violate("acknowledged entry %d lost: the ledger closed at %d", id, last)
		}
	}
	for id, err := range s.h.failed {
		if id <= last && !errors.Is(err, ErrOutcomeUnknown) {
			s.violate("entry %d is in the ledger, but its add failed with %v, not ErrOutcomeUnknown (pitfall 7)", id, err)
		}
	}
	for _, c := range s.h.closes {
		if c.last != last {
			s.violate("%s saw the ledger closed at %d, the store says %d", c.who, c.last, last)
		}
	}
	s.checkRecoveryReads(closed)
	if last < 0 {
		if closed.Length != 0 {
			s.violate("empty ledger closed with length %d", closed.Length)
		}
		return
	}
	r := s.startReader("final-reader", closed, last)
	if r == nil || !s.run(4000, func() bool { return r.done != nil }) {
		s.violate("final read of 0..%d did not finish", last)
		return
	}
	if r.done.Err != nil {
		s.violate("final read of 0..%d: %v (the closed ledger has a hole)", last, r.done.Err)
	}
	var length int64
	for id := range last + 1 {
		length += int64(len(s.h.payloads[id]))
	}
	if closed.Length != length {
		s.violate("ledger closed with length %d, its entries hold %d bytes", closed.Length, length)
	}
}

// checkRecoveryReads checks that every read a recovering client sent
// fenced, with the ledger's master key (pitfall 2).
func (s *sim) checkRecoveryReads(md Metadata) {
	key := bkproto.MasterKey(md.Password)
	for _, c := range s.clients {
		if !strings.Contains(c.name, "recovery") {
			continue
		}
		for _, r := range c.sentReads {
			if !r.Fence || r.MasterKey != key {
				s.violate("%s sent read %s/%d without the fence flag and master key (pitfall 2)", c.name, r.Bookie, r.EntryID)
				return
			}
		}
		for _, a := range c.sentAdds {
			if !a.Recovery {
				s.violate("%s sent add %s/%d without RECOVERY_ADD (pitfall 6)", c.name, a.Bookie, a.EntryID)
				return
			}
		}
	}
}
