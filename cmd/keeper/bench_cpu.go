package main

import (
	"context"
	"math"
	"time"

	"keeper/bench"
)

// benchCPU is the CPU time used over a measured interval by this process
// (the client: the load and, for bench ledger, the ledger client) and by
// the --cpu-pid processes (the servers: bookies, or a sandbox), summed.
type benchCPU struct {
	client, server time.Duration
	clientOK       bool
	serverOK       bool // --cpu-pid given and both samples taken
}

// sampleBenchCPU samples the CPU times at from and at to, or at once when
// ctx ends first, on its own goroutine; the function it returns waits for
// the second sample. A failed sample leaves its figure out.
func sampleBenchCPU(ctx context.Context, pids []int, from, to time.Time) func() benchCPU {
	done := make(chan benchCPU, 1)
	go func() {
		at := func(t time.Time) {
			timer := time.NewTimer(time.Until(t))
			defer timer.Stop()
			select {
			case <-timer.C:
			case <-ctx.Done():
			}
		}
		sample := func() (client, server time.Duration, clientErr, serverErr error) {
			client, clientErr = bench.CPUTime()
			serverErr = context.Canceled // no --cpu-pid: no figure
			if len(pids) > 0 {
				server, serverErr = bench.CPUTime(pids...)
			}
			return
		}
		at(from)
		c0, s0, ce0, se0 := sample()
		at(to)
		c1, s1, ce1, se1 := sample()
		done <- benchCPU{client: c1 - c0, server: s1 - s0,
			clientOK: ce0 == nil && ce1 == nil, serverOK: se0 == nil && se1 == nil}
	}()
	return func() benchCPU { return <-done }
}

// perAdd returns the client's and the servers' CPU time per add in
// microseconds, rounded to 0.1, nil where there is no figure.
func (c benchCPU) perAdd(adds int64) (client, server *float64) {
	if adds <= 0 {
		return nil, nil
	}
	per := func(d time.Duration) *float64 {
		v := math.Round(float64(d.Microseconds())/float64(adds)*10) / 10
		return &v
	}
	if c.clientOK {
		client = per(c.client)
	}
	if c.serverOK {
		server = per(c.server)
	}
	return client, server
}
