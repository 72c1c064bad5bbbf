package ledger

import (
	"slices"

	"keeper/ledgerstore/bkproto"
)

// DefaultSpeculativeTicks is how long a read waits, in ticks, for one
// replica before also asking the next (docs/bookkeeper-protocol.md §3.2 step 3), when the config
// leaves it zero: the Java default of 2 s at a 100 ms tick.
const DefaultSpeculativeTicks = 20

// DefaultMaxOutstandingReads bounds the entries a Reader or Tailer reads at
// once when the config leaves it zero: enough to keep a few bookies busy
// without buffering much of a ledger.
const DefaultMaxOutstandingReads = 16

// fetch reads one entry from the replicas of its write set: it asks one,
// also asks the next after SpeculativeTicks without an answer (a
// speculative read), and moves on at once after an error or a bad copy.
// The first digest-valid copy wins (docs/bookkeeper-protocol.md §3.2).
type fetch struct {
	entryID    int64
	bookies    []BookieID // candidates, in write-set order
	asked      []bool
	answered   []bool
	next       int // next candidate to ask
	sinceTicks int // ticks since the last request
	entry      *Entry
	// busy, if set, reports a bookie with too many reads in flight: the
	// fetch does not ask it yet, and tries again on the next tick.
	busy     func(BookieID) bool
	deferred bool // the next candidate was busy
}

func newFetch(entryID int64, bookies []BookieID) *fetch {
	return &fetch{
		entryID:  entryID,
		bookies:  bookies,
		asked:    make([]bool, len(bookies)),
		answered: make([]bool, len(bookies)),
	}
}

// emitFunc sends a read of entryID to a bookie; speculative marks a read
// sent because the earlier ones went unanswered for SpeculativeTicks.
type emitFunc func(b BookieID, entryID int64, speculative bool)

// askNext asks the next candidate, if any is left.
func (f *fetch) askNext(emit emitFunc, speculative bool) bool {
	if f.next >= len(f.bookies) {
		return false
	}
	if f.busy != nil && f.busy(f.bookies[f.next]) {
		f.deferred = true
		return true
	}
	f.deferred = false
	f.asked[f.next] = true
	emit(f.bookies[f.next], f.entryID, speculative)
	f.next++
	f.sinceTicks = 0
	return true
}

// tick counts one tick and sends the speculative read when it is due.
func (f *fetch) tick(speculativeTicks int, emit emitFunc) {
	if f.entry != nil {
		return
	}
	f.sinceTicks++
	if f.deferred {
		f.askNext(emit, f.sinceTicks >= speculativeTicks)
	} else if f.sinceTicks >= speculativeTicks {
		f.askNext(emit, true)
	}
}

// outstanding returns the slot of b if it was asked and has not answered.
func (f *fetch) outstanding(b BookieID) int {
	i := slices.Index(f.bookies, b)
	if i < 0 || !f.asked[i] || f.answered[i] {
		return -1
	}
	return i
}

// reply takes slot i's answer, counting a copy that fails verification in
// st. It reports failed once every candidate has answered without a valid
// copy.
func (f *fetch) reply(i int, reply ReadReply, decode func([]byte, int64) (bkproto.Entry, error),
	emit emitFunc, st *Stats) (failed bool) {
	f.answered[i] = true
	if reply.Status == bkproto.StatusCode_EOK {
		e, err := decode(reply.Body, f.entryID)
		if err == nil {
			f.entry = &Entry{EntryID: e.EntryID, Length: e.Length, Payload: e.Payload}
			return false
		}
		st.DigestMismatches++
	}
	if f.askNext(emit, false) {
		return false
	}
	for k := range f.bookies {
		if !f.answered[k] {
			return false
		}
	}
	return true
}

// entryDecoder verifies entries of one ledger.
type entryDecoder struct {
	ledgerID   int64
	digestType bkproto.DigestType
	macKey     []byte
}

func newEntryDecoder(ledgerID int64, md Metadata) entryDecoder {
	d := entryDecoder{ledgerID: ledgerID, digestType: md.Digest()}
	if md.Digest() == bkproto.DigestHMAC {
		k := bkproto.MacKey(md.Password)
		d.macKey = k[:]
	}
	return d
}

// decode verifies body as entry entryID (bkproto.LastAddConfirmed: any).
func (d entryDecoder) decode(body []byte, entryID int64) (bkproto.Entry, error) {
	return bkproto.DecodeEntry(body, d.digestType, d.macKey, d.ledgerID, entryID)
}
