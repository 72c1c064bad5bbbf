package bench

import (
	"context"
	"fmt"
	"time"
)

// This file is OpFill: it builds a large tree for the resource figures
// (memory per znode, snapshot size, time to recover) and leaves it behind.
// KeySpace znodes of SizeBytes are created under a fresh /bench-<random>
// root, as the key space of the other workloads is, with Clients sessions
// and about Inflight creates outstanding on each (Clients × Inflight in
// all). Nothing is deleted: the result names the root.

// runFill runs OpFill.
func runFill(ctx context.Context, cfg Config) (Result, error) {
	f, err := newFixture(ctx, cfg, cfg.Clients)
	if err != nil {
		return Result{}, err
	}
	defer f.closeConns()
	f.window = cfg.Clients * cfg.Inflight
	clientCPU, serverCPU := cpuSpan{}, cpuSpan{pids: cfg.CPUPIDs}
	sample := func() {
		clientCPU.sample()
		if len(cfg.CPUPIDs) > 0 {
			serverCPU.sample()
		}
	}
	sample()
	begin := time.Now()
	err = f.createKeys(ctx)
	elapsed := time.Since(begin)
	sample()
	if err != nil {
		return Result{}, fmt.Errorf("bench: fill %s (left in place): %w", f.root, err)
	}
	res := Result{
		Op: OpFill, Servers: cfg.Servers, Clients: cfg.Clients, Inflight: cfg.Inflight, SizeBytes: cfg.SizeBytes,
		DurationSec: round3(elapsed.Seconds()), Ops: int64(len(f.keys)),
		OpsPerSec: round3(float64(len(f.keys)) / elapsed.Seconds()),
		Root:      f.root,
	}
	res.setCPU(clientCPU, serverCPU)
	return res, nil
}
