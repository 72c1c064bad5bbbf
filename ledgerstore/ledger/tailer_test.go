package ledger

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"keeper/ledgerstore/bkproto"
)

// tailWorld is a ledger being written, as the bookies of a Tailer's tests
// see it: entry e carries header LAC lacOf[e] and goes to its write set.
type tailWorld struct {
	t       *testing.T
	md      Metadata
	written int64   // entries 0..written-1 are on their bookies
	lacOf   []int64 // header LAC of each entry
}

func (w *tailWorld) payload(e int64) string { return fmt.Sprintf("entry %d", e) }

func (w *tailWorld) body(e int64) []byte {
	return entryBody(w.md, e, w.lacOf[e], e+1, w.payload(e))
}

// holds reports whether bookie b has entry e.
func (w *tailWorld) holds(b BookieID, e int64) bool {
	return e >= 0 && e < w.written && slices.Contains(w.md.WriteSetBookies(e), b)
}

// bookieLAC is the highest header LAC among b's entries.
func (w *tailWorld) bookieLAC(b BookieID) int64 {
	lac := int64(-1)
	for e := range w.written {
		if w.holds(b, e) {
			lac = max(lac, w.lacOf[e])
		}
	}
	return lac
}

// trueLAC is the writer's LAC: the highest header LAC written.
func (w *tailWorld) trueLAC() int64 {
	lac := int64(-1)
	for e := range w.written {
		lac = max(lac, w.lacOf[e])
	}
	return lac
}

// pollAnswer is b's answer to a long poll that may be given now: its LAC
// and, piggybacked, entry prev+1 if it has it.
func (w *tailWorld) pollAnswer(b BookieID, prev int64) ReadReply {
	rep := ReadReply{Status: bkproto.StatusCode_EOK, EntryID: bkproto.LastAddConfirmed, MaxLAC: w.bookieLAC(b),
		HasMaxLAC: true}
	if w.holds(b, prev+1) {
		rep.EntryID, rep.Body = prev+1, w.body(prev+1)
	}
	return rep
}

// tailChecker feeds a Tailer's Ready batches and checks what it delivers
// and what it keeps in flight.
type tailChecker struct {
	w        *tailWorld
	tl       *Tailer
	pending  []ReadRequest
	next     int64 // next entry that must be delivered
	polls    map[BookieID]int
	maxFetch int64
	done     bool
}

func (c *tailChecker) drain() {
	c.w.t.Helper()
	rd := c.tl.Ready()
	for _, r := range rd.Reads {
		for _, p := range c.pending {
			if p.Bookie == r.Bookie && p.EntryID == r.EntryID && p.LongPoll == r.LongPoll {
				c.w.t.Fatalf("%s/%d (poll %v) sent twice while in flight", r.Bookie, r.EntryID, r.LongPoll)
			}
		}
		c.pending = append(c.pending, r)
		if r.LongPoll {
			if c.polls[r.Bookie]++; c.polls[r.Bookie] > 1 {
				c.w.t.Fatalf("two long polls in flight to %s", r.Bookie)
			}
		}
	}
	lac := c.w.trueLAC()
	for _, e := range rd.Entries {
		switch {
		case e.EntryID != c.next:
			c.w.t.Fatalf("delivered entry %d, want %d", e.EntryID, c.next)
		case e.EntryID > lac && !(c.w.md.State == StateClosed && e.EntryID <= c.w.md.LastEntryID):
			c.w.t.Fatalf("delivered entry %d beyond the LAC %d", e.EntryID, lac)
		case string(e.Payload) != c.w.payload(e.EntryID):
			c.w.t.Fatalf("entry %d delivered with payload %q", e.EntryID, e.Payload)
		}
		c.next++
	}
	// Reads of entries already delivered may linger (a speculative read's
	// twin); the window bounds the others.
	fetching := map[int64]bool{}
	perBookie := map[BookieID]int64{}
	for _, p := range c.pending {
		if !p.LongPoll {
			perBookie[p.Bookie]++
			if p.EntryID >= c.next {
				fetching[p.EntryID] = true
			}
		}
	}
	if int64(len(fetching)) > c.maxFetch {
		c.w.t.Fatalf("%d entries being read at once, limit %d", len(fetching), c.maxFetch)
	}
	for b, n := range perBookie {
		if n > c.maxFetch {
			c.w.t.Fatalf("%d entry reads in flight to %s, window %d", n, b, c.maxFetch)
		}
	}
	if rd.Done != nil {
		c.done = true
	}
}

// answer feeds the reply to pending request i.
func (c *tailChecker) answer(i int, rep ReadReply) {
	r := c.pending[i]
	c.pending = slices.Delete(c.pending, i, i+1)
	if r.LongPoll {
		c.polls[r.Bookie]--
	}
	c.tl.HandleRead(r, rep)
	c.drain()
}

func newTailChecker(t *testing.T, md Metadata, entries int, lacOf func(e int64) int64, maxOutstanding int) *tailChecker {
	w := &tailWorld{t: t, md: md}
	for e := range int64(entries) {
		w.lacOf = append(w.lacOf, lacOf(e))
	}
	tl, err := NewTailer(TailerConfig{LedgerID: testLedger, Metadata: md, LAC: -1, RetryTicks: 3,
		SpeculativeTicks: 2, MaxOutstanding: maxOutstanding})
	if err != nil {
		t.Fatal(err)
	}
	c := &tailChecker{w: w, tl: tl, polls: map[BookieID]int{}, maxFetch: int64(maxOutstanding)}
	c.drain()
	return c
}

// TestTailerSlowBookieDoesNotHoldBack: one bookie of the ensemble never
// answers. The tailer still delivers every entry as the LAC moves, polls
// the silent bookie once only, and keeps polling the others.
func TestTailerSlowBookieDoesNotHoldBack(t *testing.T) {
	md := testMetadata(t, 3, 2, 2, "a", "b", "c")
	const entries = 60
	c := newTailChecker(t, md, entries, func(e int64) int64 { return e - 1 }, 8)
	cPolls := 0
	for step := 0; c.w.written < entries || c.next < entries-1; step++ {
		if step > 10_000 {
			t.Fatalf("stuck: delivered up to %d, LAC %d, written %d", c.next-1, c.tl.LAC(), c.w.written)
		}
		if c.w.written < entries {
			c.w.written++
		}
		// Answer, in order, every request the live bookies can answer now.
		for i := 0; i < len(c.pending); {
			r := c.pending[i]
			switch {
			case r.Bookie == "c":
				i++
			case r.LongPoll && c.w.bookieLAC(r.Bookie) > r.PreviousLAC:
				c.answer(i, c.w.pollAnswer(r.Bookie, r.PreviousLAC))
			case r.LongPoll:
				i++ // parked until the bookie's LAC moves
			case c.w.holds(r.Bookie, r.EntryID):
				c.answer(i, okReply(c.w.body(r.EntryID)))
			default:
				c.answer(i, statusReply(bkproto.StatusCode_ENOENTRY))
			}
		}
		c.tl.Tick()
		c.drain()
	}
	for _, r := range c.pending {
		if r.Bookie == "c" && r.LongPoll {
			cPolls++
		}
	}
	if cPolls != 1 || c.polls["c"] != 1 {
		t.Fatalf("%d long polls to the silent bookie in flight, want its first one only", cPolls)
	}
	if c.polls["a"]+c.polls["b"] == 0 {
		t.Fatal("no live bookie is being polled at the end")
	}
}

// TestTailerHoldsBackBookies: a bookie whose answer brought no newer LAC
// is polled again a tick later, one that failed after RetryTicks, and one
// that moved the LAC at once.
func TestTailerHoldsBackBookies(t *testing.T) {
	md := testMetadata(t, 3, 2, 2, "a", "b", "c")
	tests := []struct {
		name  string
		reply ReadReply
		after int // ticks before "a" is polled again
	}{
		{"LAC moved", ReadReply{Status: bkproto.StatusCode_EOK, MaxLAC: 0, HasMaxLAC: true}, 0},
		{"expired", ReadReply{Status: bkproto.StatusCode_EOK, MaxLAC: -1, HasMaxLAC: true}, 1},
		{"no such ledger", statusReply(bkproto.StatusCode_ENOLEDGER), 3},
		{"no response", statusReply(NoResponse), 3},
		{"bad digest", ReadReply{Status: bkproto.StatusCode_EOK, Body: []byte("not an entry")}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl, err := NewTailer(TailerConfig{LedgerID: testLedger, Metadata: md, LAC: -1, RetryTicks: 3})
			if err != nil {
				t.Fatal(err)
			}
			tl.Ready()
			tl.HandleRead(pollReq("a", -1), tc.reply)
			for tick := 0; ; tick++ {
				rd := tl.Ready()
				var polled []string
				for _, r := range rd.Reads {
					if r.LongPoll {
						polled = append(polled, string(r.Bookie))
					}
				}
				if tick == tc.after {
					if !slices.Equal(polled, []string{"a"}) {
						t.Fatalf("after %d ticks polled %v, want a", tick, polled)
					}
					return
				}
				if len(polled) > 0 {
					t.Fatalf("after %d ticks polled %v, want nothing before tick %d", tick, polled, tc.after)
				}
				tl.Tick()
			}
		})
	}
}

// TestTailerAnswersInAnyOrder drives a tailer against bookies that answer
// in a random order, some late, some with errors or with corrupted copies,
// one of them slow, while the ledger is written and then closed. Every
// entry comes exactly once, in order, never beyond the LAC and never a
// corrupted copy; at most one long poll per bookie and MaxOutstanding
// entries are in flight.
func TestTailerAnswersInAnyOrder(t *testing.T) {
	tests := []struct {
		name     string
		e, qw    int
		slow     BookieID
		lagLAC   bool // header LACs trail by up to 3 (pipelined adds)
		corrupt  float64
		failures float64
	}{
		{"3/2 steady", 3, 2, "", false, 0, 0},
		{"3/2 pipelined, one slow", 3, 2, "b", true, 0, 0},
		{"3/3 errors and corruption", 3, 3, "", true, 0.1, 0.1},
		{"5/2 everything", 5, 2, "d", true, 0.1, 0.1},
	}
	for _, tc := range tests {
		for seed := range uint64(20) {
			t.Run(fmt.Sprintf("%s/seed=%d", tc.name, seed), func(t *testing.T) {
				tailInAnyOrder(t, tc.e, tc.qw, tc.slow, tc.lagLAC, tc.corrupt, tc.failures, seed)
			})
		}
	}
}

func tailInAnyOrder(t *testing.T, e, qw int, slow BookieID, lagLAC bool, corrupt, failures float64, seed uint64) {
	ensemble := []BookieID{"a", "b", "c", "d", "e"}[:e]
	md := testMetadata(t, e, qw, 2, ensemble...)
	r := rand.New(rand.NewPCG(seed, 7))
	const entries = 80
	lac := int64(-1)
	c := newTailChecker(t, md, entries, func(e int64) int64 {
		if lagLAC {
			lac = max(lac, e-1-r.Int64N(4))
		} else {
			lac = e - 1
		}
		return lac
	}, 6)
	closed := false
	for step := 0; !c.done; step++ {
		if step > 50_000 {
			t.Fatalf("stuck: delivered up to %d, LAC %d, written %d", c.next-1, c.tl.LAC(), c.w.written)
		}
		switch x := r.IntN(10); {
		case x == 0:
			c.tl.Tick()
			c.drain()
		case x < 3 && c.w.written < entries:
			c.w.written++
		case x < 3 && !closed:
			closed = true
			cmd := c.w.md.Clone()
			cmd.State, cmd.LastEntryID, cmd.Version = StateClosed, c.w.trueLAC(), cmd.Version+1
			c.w.md = cmd
			c.tl.HandleMetadata(cmd)
			c.drain()
		case len(c.pending) > 0:
			i := r.IntN(len(c.pending))
			req := c.pending[i]
			if req.Bookie == slow && r.IntN(20) != 0 {
				continue
			}
			switch {
			case r.Float64() < failures:
				c.answer(i, statusReply([]bkproto.StatusCode{NoResponse, bkproto.StatusCode_EIO}[r.IntN(2)]))
			case req.LongPoll && c.w.bookieLAC(req.Bookie) > req.PreviousLAC:
				c.answer(i, c.w.pollAnswer(req.Bookie, req.PreviousLAC))
			case req.LongPoll && r.IntN(8) == 0:
				c.answer(i, c.w.pollAnswer(req.Bookie, req.PreviousLAC)) // expired
			case req.LongPoll:
			case !c.w.holds(req.Bookie, req.EntryID):
				c.answer(i, statusReply(bkproto.StatusCode_ENOENTRY))
			case r.Float64() < corrupt:
				body := c.w.body(req.EntryID)
				body[len(body)-1] ^= 0xff
				c.answer(i, okReply(body))
			default:
				c.answer(i, okReply(c.w.body(req.EntryID)))
			}
		}
	}
	if c.next != c.w.md.LastEntryID+1 {
		t.Fatalf("done after delivering up to %d, the ledger ends at %d", c.next-1, c.w.md.LastEntryID)
	}
}
