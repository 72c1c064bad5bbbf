package ledger

import (
	"bytes"
	"slices"

	"keeper/ledgerstore/bkproto"
)

// simBookie is an honest bookie (docs/bookkeeper-protocol.md §7, as far as a client can see it):
// it binds the master key on first contact, fences durably, rejects plain
// adds to a fenced ledger but accepts RECOVERY_ADD, answers NoSuchEntry
// only for entries it never stored, keeps a bookie-known LAC from the
// piggybacked LACs, and parks long polls.
type simBookie struct {
	s           *sim
	id          BookieID
	down        bool
	readOnly    bool
	slowTicks   int64
	incarnation int
	ledgers     map[int64]*simLedger
	polls       []*simPoll
}

type simLedger struct {
	key     []byte
	fenced  bool
	entries map[int64][]byte
	last    int64
	lac     int64
	hasLAC  bool
}

type simPoll struct {
	req   ReadRequest
	reply func(ReadReply)
	done  bool
}

func (b *simBookie) ledger(id int64, key []byte) *simLedger {
	l := b.ledgers[id]
	if l == nil {
		l = &simLedger{key: slices.Clone(key), entries: map[int64][]byte{}, last: -1, lac: -1}
		b.ledgers[id] = l
	}
	return l
}

func (b *simBookie) add(req AddRequest) bkproto.StatusCode {
	if b.readOnly && !req.Recovery {
		return bkproto.StatusCode_EREADONLY
	}
	l := b.ledger(req.LedgerID, req.MasterKey[:])
	if !bytes.Equal(l.key, req.MasterKey[:]) {
		return bkproto.StatusCode_EUA
	}
	if l.fenced && !req.Recovery {
		return bkproto.StatusCode_EFENCED
	}
	h, err := bkproto.ParseEntryHeader(req.Body)
	if err != nil {
		return bkproto.StatusCode_EBADREQ
	}
	if old, ok := l.entries[h.EntryID]; ok && !bytes.Equal(b.s.payloadOf(old), b.s.payloadOf(req.Body)) {
		b.s.violate("bookie %s: entry %d written with two payloads (I1)", b.id, h.EntryID)
	}
	l.entries[h.EntryID] = slices.Clone(req.Body)
	l.last = max(l.last, h.EntryID)
	if !l.hasLAC || h.LAC > l.lac {
		l.lac, l.hasLAC = h.LAC, true
	}
	b.wake(req.LedgerID, l)
	return bkproto.StatusCode_EOK
}

// read answers through reply, at once or, for a parked long poll, later.
func (b *simBookie) read(req ReadRequest, reply func(ReadReply)) {
	l := b.ledgers[req.LedgerID]
	if req.Fence {
		l = b.ledger(req.LedgerID, req.MasterKey[:])
		if !bytes.Equal(l.key, req.MasterKey[:]) {
			reply(ReadReply{Status: bkproto.StatusCode_EUA})
			return
		}
		l.fenced = true // durable before the answer, whatever the answer is
	}
	if l == nil {
		reply(ReadReply{Status: bkproto.StatusCode_ENOLEDGER})
		return
	}
	switch {
	case req.LongPoll && (l.hasLAC && l.lac > req.PreviousLAC || req.TimeoutMillis <= 0):
		reply(b.pollAnswer(l, req))
	case req.LongPoll:
		p := &simPoll{req: req, reply: reply}
		b.polls = append(b.polls, p)
		inc := b.incarnation
		b.s.after(req.TimeoutMillis/simTickMillis, func() {
			if !p.done && b.incarnation == inc {
				p.done = true
				reply(b.pollAnswer(l, req))
			}
		})
	case req.Kind == ReadLAC || req.EntryID == bkproto.LastAddConfirmed:
		reply(b.entryAnswer(l, l.last))
	default:
		reply(b.entryAnswer(l, req.EntryID))
	}
}

func (b *simBookie) entryAnswer(l *simLedger, entryID int64) ReadReply {
	body, ok := l.entries[entryID]
	if !ok {
		return ReadReply{Status: bkproto.StatusCode_ENOENTRY, EntryID: entryID}
	}
	return ReadReply{Status: bkproto.StatusCode_EOK, EntryID: entryID, Body: body, MaxLAC: l.lac, HasMaxLAC: l.hasLAC}
}

// pollAnswer answers a long poll with the bookie-known LAC and, with
// ENTRY_PIGGYBACK, entry previousLAC+1 if the bookie holds it.
func (b *simBookie) pollAnswer(l *simLedger, req ReadRequest) ReadReply {
	rep := ReadReply{Status: bkproto.StatusCode_EOK, EntryID: bkproto.LastAddConfirmed, MaxLAC: l.lac, HasMaxLAC: l.hasLAC}
	if body, ok := l.entries[req.PreviousLAC+1]; ok && req.Piggyback && l.hasLAC && l.lac > req.PreviousLAC {
		rep.EntryID, rep.Body = req.PreviousLAC+1, body
	}
	return rep
}

func (b *simBookie) wake(ledgerID int64, l *simLedger) {
	kept := b.polls[:0]
	for _, p := range b.polls {
		switch {
		case p.done:
		case p.req.LedgerID == ledgerID && l.lac > p.req.PreviousLAC:
			p.done = true
			p.reply(b.pollAnswer(l, p.req))
		default:
			kept = append(kept, p)
		}
	}
	b.polls = kept
}

// payloadOf returns the payload of an entry body (whose digest type is the
// simulated ledger's).
func (s *sim) payloadOf(body []byte) []byte {
	n, _ := bkproto.DigestBytes(s.store.md.DigestType)
	if len(body) < bkproto.EntryHeaderBytes+n {
		return nil
	}
	return body[bkproto.EntryHeaderBytes+n:]
}

// simStore is the metadata store: one ledger's metadata with a version and
// compare-and-set, and watches. It checks on every write the invariants
// metadata must keep (I3 for the writer's changes, I7, immutability of all
// but the last segment, a closed ledger never changing).
type simStore struct {
	s          *sim
	md         Metadata
	closedBy   string
	closedTick int64
}

func (st *simStore) read() Metadata { return st.md.Clone() }

func (st *simStore) cas(md Metadata, who string) (int64, bool) {
	if md.Version != st.md.Version {
		st.s.tracef("%s metadata write on version %d: conflict (stored %d)", who, md.Version, st.md.Version)
		return 0, false
	}
	st.check(st.md, md, who)
	md = md.Clone()
	md.Version = st.md.Version + 1
	st.md = md
	st.s.tracef("%s metadata write: version %d state %v last %d segments %v", who, md.Version, md.State, md.LastEntryID, md.Segments)
	if md.State == StateClosed && st.closedBy == "" {
		st.closedBy, st.closedTick = who, st.s.now
	}
	for _, c := range st.s.clients {
		if c.watch && !c.dead {
			st.s.after(st.s.latency(), func() { c.deliverMetadata(st.read()) })
		}
	}
	return md.Version, true
}

func (st *simStore) check(old, md Metadata, who string) {
	s := st.s
	if err := md.Validate(); err != nil {
		s.violate("%s wrote invalid metadata: %v", who, err)
	}
	if old.State == StateClosed {
		s.violate("%s changed a closed ledger: last %d -> %d (I7)", who, old.LastEntryID, md.LastEntryID)
	}
	if md.State == StateOpen && old.State != StateOpen {
		s.violate("%s moved the ledger back to OPEN (I7)", who)
	}
	n := len(old.Segments)
	if len(md.Segments) < n || !sameSegments(md.Segments[:n-1], old.Segments[:n-1]) ||
		md.Segments[n-1].FirstEntryID != old.Segments[n-1].FirstEntryID {
		s.violate("%s rewrote immutable segments: %v -> %v", who, old.Segments, md.Segments)
		return
	}
	if who != "writer" || md.State != StateOpen {
		return
	}
	last := md.LastSegment()
	if !sameSegments(md.Segments, old.Segments) && last.FirstEntryID <= s.h.maxAcked {
		s.violate("writer installed a segment at %d with entry %d already acknowledged (I3, pitfall 3)",
			last.FirstEntryID, s.h.maxAcked)
	}
}
