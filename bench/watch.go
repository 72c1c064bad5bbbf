package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
)

// This file is OpWatch, the watch fan-out workload. Watchers sessions each
// leave a data watch (exists with watch set) on one shared znode; a
// separate writer session sets it. A round's fan-out time runs from just
// before the writer's setData is handed to its connection to the moment
// the last watcher's notification is read off its Events channel; the
// setData's own latency is measured too. Every round re-arms the watches
// first, untimed. One unrecorded warmup round runs before the measured
// ones.

// fanRound is the state of one round, shared by the watcher goroutines.
type fanRound struct {
	remaining atomic.Int64 // watchers not yet notified
	slowest   atomic.Int64 // largest notification delay so far, ns
	done      chan struct{}
}

// fanout is the state shared by the watcher goroutines across rounds.
type fanout struct {
	node   string
	base   time.Time    // origin of the ns offsets below
	sentAt atomic.Int64 // ns after base when the round's setData was sent
	cur    atomic.Pointer[fanRound]
	stray  atomic.Int64 // events that were not the expected notification
}

// watch consumes one watcher session's events until its connection ends.
func (fo *fanout) watch(events <-chan zkproto.WatcherEvent) {
	for ev := range events {
		at := time.Since(fo.base)
		r := fo.cur.Load()
		if ev.Type != zkproto.EventNodeDataChanged || ev.Path != fo.node || r == nil {
			fo.stray.Add(1)
			continue
		}
		d := int64(at) - fo.sentAt.Load()
		for {
			old := r.slowest.Load()
			if d <= old || r.slowest.CompareAndSwap(old, d) {
				break
			}
		}
		if r.remaining.Add(-1) == 0 {
			close(r.done)
		}
	}
}

// runWatch runs OpWatch.
func runWatch(ctx context.Context, cfg Config) (Result, error) {
	f, err := newFixture(ctx, cfg, cfg.Watchers+1) // the last session is the writer
	if err != nil {
		return Result{}, err
	}
	fo := &fanout{node: f.root + "/watched", base: time.Now()}
	f.keys = []string{fo.node} // for cleanup
	var wg sync.WaitGroup
	defer func() {
		f.closeConns() // ends the watcher goroutines
		wg.Wait()
	}()
	watchers, writer := f.conns[:cfg.Watchers], f.conns[cfg.Watchers]
	for _, c := range watchers {
		wg.Go(func() { fo.watch(c.Events()) })
	}
	res, err := fo.prepare(ctx, f, writer)
	if err == nil {
		res, err = fo.rounds(ctx, cfg, watchers, writer, f.payload)
	}
	if cerr := f.cleanup(ctx, nil); cerr != nil {
		res.CleanupError = cerr.Error()
	}
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// prepare creates the watched znode and makes every session's server catch
// up with it (in an ensemble, a watcher's server may not have applied the
// create yet, and its exists would leave no data watch).
func (fo *fanout) prepare(ctx context.Context, f *fixture, writer *zkclient.Conn) (Result, error) {
	if _, _, err := writer.Create(ctx, fo.node, f.payload, zkclient.CreateOptions{}); err != nil {
		return Result{}, fmt.Errorf("bench: create %s: %w", fo.node, err)
	}
	if err := f.syncAll(ctx); err != nil {
		return Result{}, fmt.Errorf("bench: sync the watchers: %w", err)
	}
	return Result{}, nil
}

// rounds runs the warmup round and the measured ones.
func (fo *fanout) rounds(ctx context.Context, cfg Config, watchers []*zkclient.Conn, writer *zkclient.Conn, payload []byte) (Result, error) {
	fanHist, setHist := NewHistogram(), NewHistogram()
	clientCPU, serverCPU := cpuSpan{}, cpuSpan{pids: cfg.CPUPIDs}
	var begin time.Time
	for round := -1; round < cfg.Rounds; round++ {
		if round == 0 {
			clientCPU.sample()
			if len(cfg.CPUPIDs) > 0 {
				serverCPU.sample()
			}
			begin = time.Now()
		}
		fan, set, err := fo.round(ctx, cfg, watchers, writer, payload)
		if err != nil {
			return Result{}, fmt.Errorf("bench: watch round %d: %w", round+1, err)
		}
		if round >= 0 {
			fanHist.Record(fan)
			setHist.Record(set)
		}
	}
	elapsed := time.Since(begin)
	clientCPU.sample()
	if len(cfg.CPUPIDs) > 0 {
		serverCPU.sample()
	}
	res := Result{
		Op: OpWatch, Servers: cfg.Servers, Clients: cfg.Watchers, Inflight: 1, SizeBytes: cfg.SizeBytes,
		DurationSec: round3(elapsed.Seconds()), Ops: int64(cfg.Rounds),
		OpsPerSec: round3(float64(cfg.Rounds) / elapsed.Seconds()),
		Watchers:  cfg.Watchers,
		SetP50Us:  micros(setHist.Quantile(0.5)), SetP99Us: micros(setHist.Quantile(0.99)),
	}
	res.setLatencies(fanHist)
	if n := fo.stray.Load(); n > 0 {
		res.Errors = n
		res.ErrorsByCode = map[string]int64{"UnexpectedEvent": n}
	}
	res.setCPU(clientCPU, serverCPU)
	return res, nil
}

// round arms every watcher, sets the node and waits for every
// notification. It returns the fan-out time and the setData latency.
func (fo *fanout) round(ctx context.Context, cfg Config, watchers []*zkclient.Conn, writer *zkclient.Conn, payload []byte) (fan, set time.Duration, err error) {
	r := &fanRound{done: make(chan struct{})}
	r.remaining.Store(int64(len(watchers)))
	fo.cur.Store(r)
	err = pipeline(ctx, setupWindow, len(watchers), func(i int) (*zkclient.Conn, zkproto.Op, jute.Record) {
		return watchers[i], zkproto.OpExists, &zkproto.ExistsRequest{Path: fo.node, Watch: true}
	})
	if err != nil {
		return 0, 0, fmt.Errorf("arm watches: %w", err)
	}
	type setReply struct {
		latency time.Duration
		err     error
	}
	replied := make(chan setReply, 1)
	sent := time.Since(fo.base)
	fo.sentAt.Store(int64(sent))
	writer.Go(zkproto.OpSetData, &zkproto.SetDataRequest{Path: fo.node, Data: payload, Version: -1}, func(res zkclient.Result) {
		replied <- setReply{time.Since(fo.base) - sent, res.Err}
	})
	timer := time.NewTimer(cfg.SessionTimeout)
	defer timer.Stop()
	select {
	case rep := <-replied:
		if rep.err != nil {
			return 0, 0, fmt.Errorf("set %s: %w", fo.node, rep.err)
		}
		set = rep.latency
	case <-timer.C:
		return 0, 0, fmt.Errorf("no reply to the set within %v", cfg.SessionTimeout)
	case <-ctx.Done():
		return 0, 0, context.Cause(ctx)
	}
	select {
	case <-r.done:
		return time.Duration(r.slowest.Load()), set, nil
	case <-timer.C:
		return 0, 0, fmt.Errorf("%d of %d watchers not notified within %v",
			r.remaining.Load(), len(watchers), cfg.SessionTimeout)
	case <-ctx.Done():
		return 0, 0, context.Cause(ctx)
	}
}
