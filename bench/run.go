package bench

import (
	"context"
	"fmt"
)

// Run runs the workload cfg describes and returns its measurements. It
// connects, prepares the znodes the workload needs under a fresh
// /bench-<random> root (untimed), runs the load, and deletes what it
// created (best effort, untimed: a failure is reported in
// Result.CleanupError, not as Run's error). Cancelling ctx stops the load
// early; Run then returns ctx's error and, for get, exists, set, create
// and mixed, the partial result, marked Interrupted.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	cfg = cfg.withDefaults()
	if len(cfg.CPUPIDs) > 0 {
		if _, err := procCPUTimes(cfg.CPUPIDs); err != nil {
			return Result{}, err // better now than after the run
		}
	}
	switch cfg.Op {
	case OpWatch:
		return runWatch(ctx, cfg)
	case OpFill:
		return runFill(ctx, cfg)
	case OpReady:
		return runReady(ctx, cfg)
	}
	f, err := newFixture(ctx, cfg, cfg.Clients)
	if err != nil {
		return Result{}, err
	}
	defer f.closeConns()
	var out loadOutcome
	if cfg.Op != OpCreate {
		err = f.createKeys(ctx)
		if err != nil {
			err = fmt.Errorf("bench: create the key space: %w", err)
		}
	}
	if err == nil {
		err = f.syncAll(ctx)
	}
	if err == nil {
		out, err = runLoad(ctx, f)
	}
	if cerr := f.cleanup(ctx, out.created); cerr != nil { // it outlives ctx, within cleanupTimeout
		out.res.CleanupError = cerr.Error()
	}
	if err != nil {
		if out.res.Interrupted {
			return out.res, err
		}
		return Result{}, err
	}
	return out.res, nil
}
