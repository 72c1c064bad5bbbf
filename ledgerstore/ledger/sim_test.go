package ledger

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"keeper/ledgerstore/bkproto"
)

// The simulator runs the state machines of this package against bookies
// and a metadata store modelled in memory, in virtual time (ticks), with
// every random choice drawn from one seeded source. It plays the driver's
// part exactly as doc.go describes it: one answer per request (a response,
// or NoResponse at the timeout), compare-and-set metadata writes whose
// outcome may be unknown, watches. Scenario tests (pitfalls_test.go) script
// faults with rules; TestSimulation (sim_sweep_test.go) draws them at
// random. Every run ends with the checks of sim_check_test.go.

const (
	simTickMillis   = 10 // one tick is 10 ms of the bookies' long-poll clock
	simTimeoutTicks = 40 // the driver's request timeout
	simRetryTicks   = 5
	simSpecTicks    = 8
	simPollMillis   = 300
	simLedgerID     = 42
	simTraceLines   = 300
)

type simEvent struct {
	at, seq int64
	fn      func()
}

type eventQueue []*simEvent

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*simEvent)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// action is what a fault rule does to one request.
type action struct {
	drop    bool               // the request is lost: the driver times out
	delay   int64              // extra ticks before the bookie sees it
	answer  bool               // the bookie answers status without doing anything
	status  bkproto.StatusCode // with answer
	corrupt bool               // a read's body comes back with a flipped bit
	body    []byte             // with answer: the body of the (EOK) answer
}

// rule returns an action for a request (an AddRequest or a ReadRequest)
// from client c to bookie b, and whether it applies.
type rule func(c *simClient, b BookieID, req any) (action, bool)

type sim struct {
	tb       testing.TB
	seed     uint64
	rng      *rand.Rand
	now      int64
	seq      int64
	events   eventQueue
	bookies  map[BookieID]*simBookie
	ids      []BookieID
	store    *simStore
	clients  []*simClient
	rules    []rule
	hooks    []func()
	h        *history
	failures []string
	trace    []string
}

func newSim(tb testing.TB, seed uint64, nBookies int) *sim {
	s := &sim{tb: tb, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x1ed9e7)), bookies: map[BookieID]*simBookie{}}
	for i := range nBookies {
		id := BookieID(fmt.Sprintf("b%d", i+1))
		s.bookies[id] = &simBookie{s: s, id: id, ledgers: map[int64]*simLedger{}}
		s.ids = append(s.ids, id)
	}
	s.store = &simStore{s: s}
	s.h = newHistory()
	return s
}

func (s *sim) tracef(format string, args ...any) {
	s.trace = append(s.trace, fmt.Sprintf("t=%d ", s.now)+fmt.Sprintf(format, args...))
	if len(s.trace) > simTraceLines {
		s.trace = s.trace[len(s.trace)-simTraceLines:]
	}
}

// violate records a broken guarantee; the run fails at its end.
func (s *sim) violate(format string, args ...any) {
	msg := fmt.Sprintf("t=%d: ", s.now) + fmt.Sprintf(format, args...)
	s.failures = append(s.failures, msg)
	s.tracef("VIOLATION %s", msg)
}

func (s *sim) after(delay int64, fn func()) {
	s.seq++
	heap.Push(&s.events, &simEvent{at: s.now + max(delay, 0), seq: s.seq, fn: fn})
}

func (s *sim) latency() int64 { return 1 + s.rng.Int64N(3) }

func (s *sim) step() {
	for len(s.events) > 0 && s.events[0].at <= s.now {
		heap.Pop(&s.events).(*simEvent).fn()
	}
	for _, h := range s.hooks {
		h()
	}
	for _, c := range s.clients {
		c.tick()
	}
	s.now++
}

// run steps until cond holds (checked before each tick) or maxTicks pass.
func (s *sim) run(maxTicks int64, cond func() bool) bool {
	for end := s.now + maxTicks; s.now < end; {
		if cond != nil && cond() {
			return true
		}
		s.step()
	}
	return cond != nil && cond()
}

func (s *sim) actionFor(c *simClient, b BookieID, req any) action {
	for _, r := range s.rules {
		if a, ok := r(c, b, req); ok {
			return a
		}
	}
	return action{}
}

// report fails the test with every violation, the seed and the end of the
// trace.
func (s *sim) report(replay string) {
	s.tb.Helper()
	if len(s.failures) == 0 {
		return
	}
	s.tb.Fatalf("%s\n--- trace (last %d lines) ---\n%s\nreplay: %s",
		strings.Join(s.failures, "\n"), len(s.trace), strings.Join(s.trace, "\n"), replay)
}

type readier interface{ Ready() Ready }

type connKey struct {
	b     BookieID
	op    int // 0 add, 1 read entry, 2 read LAC
	entry int64
}

// simClient is one client process: a state machine and the driver around
// it. A dead client ignores every answer; its requests may still land.
type simClient struct {
	s                *sim
	name             string
	m                readier
	dead             bool
	watch            bool
	inflight         map[connKey]bool
	sessionDownUntil int64
	// sessionWritesLand decides whether a metadata write sent while the
	// session is down lands: −1 (the default) at random, 0 never, 1 always.
	sessionWritesLand int
	onReady           func(Ready)
	done              *Outcome
	sentReads         []ReadRequest
	sentReadTicks     []int64
	sentAdds          []AddRequest
}

func (s *sim) addClient(name string, m readier, onReady func(Ready)) *simClient {
	c := &simClient{s: s, name: name, m: m, inflight: map[connKey]bool{}, onReady: onReady, sessionWritesLand: -1}
	s.clients = append(s.clients, c)
	c.flush()
	return c
}

// flush carries out the machine's Ready, as doc.go says a driver must.
func (c *simClient) flush() {
	for !c.dead {
		rd := c.m.Ready()
		if rd.Empty() {
			return
		}
		if rd.MetadataWrite != nil {
			c.metaWrite(rd.MetadataWrite.Metadata)
		}
		for _, a := range rd.Adds {
			c.sendAdd(a)
		}
		for _, r := range rd.Reads {
			c.sendRead(r)
		}
		if rd.RefreshMetadata {
			c.s.after(c.s.latency(), func() { c.deliverMetadata(c.s.store.read()) })
		}
		if c.onReady != nil {
			c.onReady(rd)
		}
		if rd.Done != nil {
			c.done = rd.Done
			c.s.tracef("%s done: err=%v last=%d lac=%d", c.name, rd.Done.Err, rd.Done.Metadata.LastEntryID, rd.Done.LAC)
		}
	}
}

func (c *simClient) tick() {
	if t, ok := c.m.(interface{ Tick() }); ok && !c.dead && c.done == nil {
		t.Tick()
		c.flush()
	}
}

func (c *simClient) sendAdd(req AddRequest) {
	s := c.s
	c.sentAdds = append(c.sentAdds, req)
	k := connKey{b: req.Bookie, entry: req.EntryID}
	if c.inflight[k] {
		s.violate("%s: two identical adds in flight to %s for entry %d (pitfall 10)", c.name, req.Bookie, req.EntryID)
	}
	c.inflight[k] = true
	resolved := false
	resolve := func(st bkproto.StatusCode) {
		if resolved {
			return
		}
		resolved = true
		delete(c.inflight, k)
		if c.dead || c.done != nil {
			return
		}
		c.m.(interface {
			HandleAdd(AddRequest, bkproto.StatusCode)
		}).HandleAdd(req, st)
		c.flush()
	}
	s.after(simTimeoutTicks, func() { resolve(NoResponse) })
	act := s.actionFor(c, req.Bookie, req)
	if act.drop {
		s.tracef("%s add %s/%d dropped", c.name, req.Bookie, req.EntryID)
		return
	}
	b := s.bookies[req.Bookie]
	s.after(s.latency()+act.delay+b.slowTicks, func() {
		if b.down {
			return
		}
		st := act.status
		if !act.answer {
			st = b.add(req)
		}
		s.tracef("%s add %s/%d recovery=%v -> %v", c.name, req.Bookie, req.EntryID, req.Recovery, st)
		s.after(s.latency(), func() { resolve(st) })
	})
}

func (c *simClient) sendRead(req ReadRequest) {
	s := c.s
	c.sentReads = append(c.sentReads, req)
	c.sentReadTicks = append(c.sentReadTicks, s.now)
	k := connKey{b: req.Bookie, op: 1 + int(req.Kind), entry: req.EntryID}
	if c.inflight[k] {
		s.violate("%s: two identical reads in flight to %s for entry %d (pitfall 10)", c.name, req.Bookie, req.EntryID)
	}
	c.inflight[k] = true
	resolved := false
	resolve := func(rep ReadReply) {
		if resolved {
			return
		}
		resolved = true
		delete(c.inflight, k)
		if c.dead || c.done != nil {
			return
		}
		c.m.(interface {
			HandleRead(ReadRequest, ReadReply)
		}).HandleRead(req, rep)
		c.flush()
	}
	timeout := int64(simTimeoutTicks)
	if req.LongPoll {
		timeout += req.TimeoutMillis / simTickMillis
	}
	s.after(timeout, func() { resolve(ReadReply{Status: NoResponse}) })
	act := s.actionFor(c, req.Bookie, req)
	if act.drop {
		s.tracef("%s read %s/%d fence=%v dropped", c.name, req.Bookie, req.EntryID, req.Fence)
		return
	}
	b := s.bookies[req.Bookie]
	s.after(s.latency()+act.delay+b.slowTicks, func() {
		if b.down {
			return
		}
		if act.answer {
			rep := ReadReply{Status: act.status, EntryID: req.EntryID, Body: act.body}
			s.tracef("%s read %s/%d answered %v by a fault rule", c.name, req.Bookie, req.EntryID, act.status)
			s.after(s.latency(), func() { resolve(rep) })
			return
		}
		b.read(req, func(rep ReadReply) {
			if act.corrupt && len(rep.Body) > 0 {
				rep.Body = slices.Clone(rep.Body)
				rep.Body[len(rep.Body)-1] ^= 0x40
			}
			s.tracef("%s read %s/%d fence=%v poll=%v -> %v entry=%d", c.name, req.Bookie, req.EntryID,
				req.Fence, req.LongPoll, rep.Status, rep.EntryID)
			s.after(s.latency(), func() { resolve(rep) })
		})
	})
}

// metaWrite carries out a compare-and-set. While the client's session is
// down the outcome is unknown: the write may land or not, and the driver
// learns only by re-reading once the session is back.
func (c *simClient) metaWrite(md Metadata) {
	s := c.s
	s.after(s.latency(), func() {
		if c.dead {
			return
		}
		if s.now < c.sessionDownUntil {
			landed := c.sessionWritesLand == 1 || c.sessionWritesLand < 0 && s.rng.IntN(2) == 0
			if landed {
				s.store.cas(md, c.name)
			}
			s.tracef("%s metadata write during session loss, landed=%v", c.name, landed)
			s.after(c.sessionDownUntil-s.now+s.latency(), func() { c.deliverMetadata(s.store.read()) })
			return
		}
		v, ok := s.store.cas(md, c.name)
		s.after(s.latency(), func() {
			if c.dead || c.done != nil {
				return
			}
			if ok {
				c.m.(interface{ HandleMetadataWritten(int64) }).HandleMetadataWritten(v)
				c.flush()
			} else {
				c.deliverMetadata(s.store.read())
			}
		})
	})
}

func (c *simClient) deliverMetadata(md Metadata) {
	if c.dead || c.done != nil {
		return
	}
	c.m.(interface{ HandleMetadata(Metadata) }).HandleMetadata(md)
	c.flush()
}

// kill stops the client: a crash of the process.
func (c *simClient) kill() {
	c.dead = true
	c.s.tracef("%s killed", c.name)
}

// crash takes a bookie down: requests to it are lost, parked long polls
// die, and its stored entries and fence flags survive (what the journal
// guarantees). Clients notice broken connections.
func (s *sim) crash(b BookieID) {
	bk := s.bookies[b]
	if bk.down {
		return
	}
	bk.down = true
	bk.incarnation++
	bk.polls = nil
	s.tracef("bookie %s crashed", b)
	for _, c := range s.clients {
		if f, ok := c.m.(interface{ BookieFailed(BookieID) }); ok && !c.dead {
			s.after(1, func() {
				if !c.dead && c.done == nil {
					f.BookieFailed(b)
					c.flush()
				}
			})
		}
	}
}

func (s *sim) restart(b BookieID) {
	if s.bookies[b].down {
		s.bookies[b].down = false
		s.tracef("bookie %s restarted", b)
	}
}

// heal ends every fault: rules, crashes, slowness, session losses.
func (s *sim) heal() {
	s.rules = nil
	for _, id := range s.ids {
		s.restart(id)
		s.bookies[id].slowTicks = 0
	}
	for _, c := range s.clients {
		c.sessionDownUntil = 0
	}
	s.tracef("healed")
}

func (s *sim) candidates() Candidates {
	c := Candidates{Available: slices.Clone(s.ids)}
	for _, id := range s.ids {
		if s.bookies[id].readOnly {
			c.ReadOnly = append(c.ReadOnly, id)
		}
	}
	return c
}
