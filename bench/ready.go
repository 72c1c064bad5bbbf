package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
)

// This file is OpReady: how long a server takes from its process start to
// its first served read, e.g. after a restart with a large tree on disk.
// A server may accept connections before it has loaded its data (Apache
// ZooKeeper answers ruok with imok then, and closes client sessions until
// it is running), so readiness is a getData of ReadyPath that succeeds:
// read a znode that only the loaded tree holds. Each attempt opens a new
// session, cycling over the servers, until one succeeds or Duration ends.
//
// Attempts start at a pace that slows with the time waited so far (a
// twentieth of it, between readyMinPause and readyMaxPause), so the result
// is late by at most 5% or 50 ms, while a server that takes seconds to
// load is not kept busy refusing (and logging) hundreds of connections.
// A new attempt does not wait for the last one to fail: Apache ZooKeeper
// 3.8 can leave a connection it accepted while loading neither answered
// nor closed (its close fails on the database it has not loaded yet), and
// waiting for that attempt to time out would add seconds. Up to
// readyMaxOutstanding attempts run at once.

const (
	readyMinPause       = 5 * time.Millisecond
	readyMaxPause       = 50 * time.Millisecond
	readyMaxOutstanding = 4
	// readyAttemptTimeout bounds one attempt, so that a connection the
	// server never answers frees its slot.
	readyAttemptTimeout = 5 * time.Second
)

// attemptResult is the outcome of one attempt, at when after the start.
type attemptResult struct {
	err error
	at  time.Duration
}

// runReady runs OpReady.
func runReady(ctx context.Context, cfg Config) (Result, error) {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	var wg sync.WaitGroup
	defer func() {
		cancel() // ends the attempts still running
		wg.Wait()
	}()
	results := make(chan attemptResult, readyMaxOutstanding)
	next := time.NewTimer(0)
	defer next.Stop()
	var (
		lastErr               error
		answered              bool // lastErr is a server's answer
		attempts, outstanding int
	)
	for {
		select {
		case <-next.C:
			if outstanding < readyMaxOutstanding {
				addr := cfg.Servers[attempts%len(cfg.Servers)]
				attempts++
				outstanding++
				wg.Go(func() {
					err := readOnce(ctx, addr, cfg)
					results <- attemptResult{err, time.Since(begin)}
				})
			}
			next.Reset(min(max(time.Since(begin)/20, readyMinPause), readyMaxPause))
		case r := <-results:
			outstanding--
			if r.err == nil {
				return readyResult(cfg, attempts, r.at)
			}
			// The error reported is the last answer a server gave (NoNode:
			// it serves, without the znode), or while none answered, the
			// last failure to reach one. On a busy machine the attempts
			// that answer and those that time out interleave by chance;
			// the answer is what tells the user why the server is not
			// ready. An attempt that the end of the run cut short (both
			// cases of the select are ready then, and either may run
			// first) says nothing.
			switch {
			case ctx.Err() != nil && lastErr != nil:
			case serverAnswer(r.err):
				lastErr, answered = r.err, true
			case !answered:
				lastErr = r.err
			}
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				return Result{}, fmt.Errorf("bench: no read of %s served within %v: %w", cfg.ReadyPath, cfg.Duration, lastErr)
			}
			return Result{}, context.Cause(ctx)
		}
	}
}

// serverAnswer reports whether err is a server's answer, a ZooKeeper
// error code, rather than a failure to reach the server (which the client
// reports as a connection loss or an operation timeout).
func serverAnswer(err error) bool {
	var zerr *zkproto.Error
	return errors.As(err, &zerr) && zerr.Code != zkproto.CodeConnectionLoss && zerr.Code != zkproto.CodeOperationTimeout
}

// readOnce opens a session to addr, reads cfg.ReadyPath and closes it.
func readOnce(ctx context.Context, addr string, cfg Config) error {
	ctx, cancel := context.WithTimeout(ctx, readyAttemptTimeout)
	defer cancel()
	c, err := zkclient.Dial(ctx, addr, cfg.dialOptions())
	if err != nil {
		return err
	}
	defer c.Close()
	_, _, err = c.Get(ctx, cfg.ReadyPath, false)
	return err
}

// readyResult builds the result once a read was served, elapsed after the
// run began, after attempts attempts: the time is measured from the
// server's start instead when its pid is known.
func readyResult(cfg Config, attempts int, elapsed time.Duration) (Result, error) {
	res := Result{
		Op: OpReady, Servers: cfg.Servers, Clients: 1, Inflight: 1,
		DurationSec: round6(elapsed.Seconds()), Ops: 1, Attempts: attempts,
		ReadySec: round6(elapsed.Seconds()),
	}
	if len(cfg.CPUPIDs) == 0 {
		return res, nil
	}
	pid := cfg.CPUPIDs[0]
	age, err := procAge(pid)
	if err != nil {
		return Result{}, err
	}
	res.ReadySec = round6(age.Seconds())
	if cpu, err := procCPUTime(pid); err == nil {
		v := round3(cpu.Seconds())
		res.ServerCPUSeconds = &v
	}
	return res, nil
}

// round6 rounds v to the microsecond.
func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }
