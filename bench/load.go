package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
)

// This file is the closed-loop load of get, exists, set, create and mixed.
//
// Each client owns Inflight slots. A slot holds one request at a time: its
// reply's callback records the latency and sends the slot's next request,
// so each session keeps exactly Inflight requests outstanding until the
// run ends. zkclient runs a connection's callbacks one at a time on its
// reader goroutine. Run sends only slot 0's first request itself, and that
// reply's callback sends the first request of every other slot, so all of
// a client's state (histogram, counters, random sources, request records)
// is touched by one goroutine at a time and needs no lock. A request whose
// connection has already failed completes at once on the sending
// goroutine, which is still that same chain of callbacks.

// window is the timing of a run, fixed before the first request is sent.
type window struct {
	measureFrom time.Time // end of the warmup
	end         time.Time
	stop        atomic.Bool  // set when the caller's context ends
	replies     atomic.Int64 // successful replies so far, warmup included: for progress lines
	failures    atomic.Int64 // failed requests so far
}

// loader is one client session's closed loop.
type loader struct {
	id    int
	conn  *zkclient.Conn
	f     *fixture
	w     *window
	slots []slot
	done  chan struct{} // closed when no slot has a request outstanding

	// Owned by the chain of callbacks (see the file comment).
	opened      bool // slot 0's first reply has opened the other slots
	outstanding int
	hist        *Histogram
	ops         int64 // successful replies in the measured interval
	errs        map[zkproto.Code]int64
	created     int64 // OpCreate: paths issued; the next sequence number
}

// slot is one request outstanding on a loader. Its request records are
// reused: zkclient encodes a request when it is sent, and the slot changes
// its records again only in the callback of that request's reply.
type slot struct {
	l     *loader
	rng   *rand.Rand
	start time.Time // when the outstanding request was sent
	cb    func(zkclient.Result)

	get     zkproto.GetDataRequest
	exists  zkproto.ExistsRequest
	set     zkproto.SetDataRequest
	create  zkproto.CreateRequest
	pathBuf []byte
}

func newLoader(id int, f *fixture, w *window) *loader {
	l := &loader{
		id:          id,
		conn:        f.conns[id],
		f:           f,
		w:           w,
		slots:       make([]slot, f.cfg.Inflight),
		done:        make(chan struct{}),
		outstanding: f.cfg.Inflight,
		hist:        NewHistogram(),
		errs:        make(map[zkproto.Code]int64),
	}
	for i := range l.slots {
		s := &l.slots[i]
		s.l = l
		s.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
		s.cb = s.complete
		s.set = zkproto.SetDataRequest{Data: f.payload, Version: -1}
		s.create = zkproto.CreateRequest{Data: f.payload, ACL: zkproto.OpenACLUnsafe}
	}
	return l
}

// start sends slot 0's first request; its reply opens the other slots.
func (l *loader) start() { l.slots[0].issue(time.Now()) }

// issue sends the slot's next request; now is the current time.
func (s *slot) issue(now time.Time) {
	op, req := s.next()
	s.start = now
	s.l.conn.Go(op, req, s.cb)
}

// next fills in and returns the slot's next request.
func (s *slot) next() (zkproto.Op, jute.Record) {
	l := s.l
	switch l.f.cfg.Op {
	case OpGet:
		s.get.Path = s.key()
		return zkproto.OpGetData, &s.get
	case OpExists:
		s.exists.Path = s.key()
		return zkproto.OpExists, &s.exists
	case OpSet:
		s.set.Path = s.key()
		return zkproto.OpSetData, &s.set
	case OpMixed:
		if s.rng.Float64() < l.f.cfg.ReadRatio {
			s.get.Path = s.key()
			return zkproto.OpGetData, &s.get
		}
		s.set.Path = s.key()
		return zkproto.OpSetData, &s.set
	}
	s.pathBuf = appendCreatedPath(s.pathBuf[:0], l.f.root, l.id, l.created)
	l.created++
	s.create.Path = string(s.pathBuf)
	return zkproto.OpCreate, &s.create
}

// key returns a random path of the key space.
func (s *slot) key() string { return s.l.f.keys[s.rng.IntN(len(s.l.f.keys))] }

// complete is the callback of every request the slot sends.
func (s *slot) complete(r zkclient.Result) {
	l := s.l
	now := time.Now()
	if !l.opened {
		l.opened = true
		for i := 1; i < len(l.slots); i++ {
			l.slots[i].issue(now)
		}
	}
	if r.Err != nil {
		l.w.failures.Add(1)
	} else {
		l.w.replies.Add(1)
	}
	switch {
	case r.Err != nil:
		l.errs[zkproto.CodeOf(r.Err)]++
	case !now.Before(l.w.measureFrom) && now.Before(l.w.end):
		l.hist.Record(now.Sub(s.start))
		l.ops++
	}
	if now.Before(l.w.end) && !l.w.stop.Load() && canContinue(r.Err) {
		s.issue(now)
		return
	}
	l.outstanding--
	if l.outstanding == 0 {
		close(l.done)
	}
}

// canContinue reports whether a slot may send another request after a
// reply with err: yes after success and after an API error (NoNode, say,
// which is the server's answer), no when the connection is gone.
func canContinue(err error) bool {
	var zerr *zkproto.Error
	return err == nil || errors.As(err, &zerr) && zerr.Code <= zkproto.CodeAPIError && !errors.Is(err, zkclient.ErrConnectionLoss)
}

// loadOutcome is what runLoad measured.
type loadOutcome struct {
	res     Result
	created []int64 // per client: how many OpCreate paths it issued
}

// runLoad runs the closed loop on every session of f and gathers the
// result. On error the outcome's created counts are still valid.
func runLoad(ctx context.Context, f *fixture) (loadOutcome, error) {
	cfg := f.cfg
	w := &window{}
	loaders := make([]*loader, len(f.conns))
	for i := range loaders {
		loaders[i] = newLoader(i, f, w)
	}
	clientCPU, serverCPU := cpuSpan{}, cpuSpan{pids: cfg.CPUPIDs}
	begin := time.Now()
	w.measureFrom = begin.Add(cfg.Warmup)
	w.end = w.measureFrom.Add(cfg.Duration)
	stop := context.AfterFunc(ctx, func() { w.stop.Store(true) })
	defer stop()
	for _, l := range loaders {
		l.start()
	}
	if cfg.Progress != nil {
		stopProgress := reportProgress(cfg.Progress, w, begin, time.Second)
		defer stopProgress()
	}
	sample := func() {
		clientCPU.sample()
		if len(cfg.CPUPIDs) > 0 {
			serverCPU.sample()
		}
	}
	if sleepUntil(ctx, w.measureFrom) {
		sample()
	}
	if sleepUntil(ctx, w.end) {
		sample()
	}
	stoppedAt := time.Now()
	err := drain(f, loaders)
	measured := cfg.Duration
	if stoppedAt.Before(w.end) { // interrupted: what was measured until then
		measured = max(stoppedAt.Sub(w.measureFrom), 0)
	}
	out := gather(cfg, loaders, clientCPU, serverCPU, measured) // its created counts are needed for cleanup even on error
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
		out.res.Interrupted = true
	}
	return out, err
}

// reportProgress writes a line to w every interval until the returned
// function is called: an operator watching a long run sees that it runs
// and how fast.
func reportProgress(out io.Writer, w *window, begin time.Time, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		last, lastAt := int64(0), begin
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				n := w.replies.Load()
				phase := "measuring"
				if now.Before(w.measureFrom) {
					phase = "warmup"
				}
				fmt.Fprintf(out, "bench: %4.0fs %s: %d replies, %.0f/s over the last %v, %d errors\n",
					now.Sub(begin).Seconds(), phase, n, float64(n-last)/now.Sub(lastAt).Seconds(),
					now.Sub(lastAt).Round(100*time.Millisecond), w.failures.Load())
				last, lastAt = n, now
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// drain waits until every loader has no request outstanding. Replies to
// requests sent just before the end still count as errors if they fail,
// so they are waited for; a server that does not answer within the
// session timeout has its sessions closed, which fails the requests.
func drain(f *fixture, loaders []*loader) error {
	timer := time.NewTimer(f.cfg.SessionTimeout)
	defer timer.Stop()
	for _, l := range loaders {
		select {
		case <-l.done:
		case <-timer.C:
			f.closeConns()
			for _, l := range loaders {
				<-l.done
			}
			return fmt.Errorf("bench: requests still unanswered %v after the run ended", f.cfg.SessionTimeout)
		}
	}
	return nil
}

// gather merges the loaders' measurements into a Result.
func gather(cfg Config, loaders []*loader, clientCPU, serverCPU cpuSpan, measured time.Duration) loadOutcome {
	hist := NewHistogram()
	errs := make(map[zkproto.Code]int64)
	out := loadOutcome{created: make([]int64, len(loaders))}
	res := &out.res
	for i, l := range loaders {
		hist.Merge(l.hist)
		res.Ops += l.ops
		for c, n := range l.errs {
			errs[c] += n
		}
		out.created[i] = l.created
	}
	res.Op, res.Servers = cfg.Op, cfg.Servers
	res.Clients, res.Inflight, res.SizeBytes = cfg.Clients, cfg.Inflight, cfg.SizeBytes
	res.DurationSec = round3(measured.Seconds())
	if measured > 0 {
		res.OpsPerSec = round3(float64(res.Ops) / measured.Seconds())
	}
	res.setLatencies(hist)
	res.setErrors(errs)
	res.setCPU(clientCPU, serverCPU)
	return out
}

// sleepUntil waits until t; it returns false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
