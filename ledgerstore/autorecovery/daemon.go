package autorecovery

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"keeper/internal/metric"
	"keeper/ledgerstore/metadata"
)

// Daemon is one autorecovery process's work: a vote in the auditor
// election (and the auditor while elected) and a replication worker
// (BookKeeper's AutoRecoveryMain).
type Daemon struct {
	cfg    Config
	mgr    *Manager
	worker *worker
	cancel context.CancelFunc
	wg     sync.WaitGroup

	auditing        atomic.Bool
	marked          atomic.Int64
	underReplicated metric.OpStats // ledgers marked per audit that marked any (MetricUnderReplicated)

	mu        sync.Mutex // guards placement
	placement PlacementCheck
}

// PlacementCheck returns what this daemon's auditor's last placement
// policy check found (zero before the first).
func (d *Daemon) PlacementCheck() PlacementCheck {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.placement
}

// Start starts a daemon; Close stops it.
func Start(ctx context.Context, cfg Config) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	mgr, err := NewManager(ctx, cfg.Store, cfg.ID)
	if err != nil {
		return nil, err
	}
	d := &Daemon{cfg: cfg, mgr: mgr, worker: newWorker(cfg, mgr)}
	life, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	if !cfg.NoAuditor {
		d.wg.Go(func() { d.elect(life) })
	}
	if !cfg.NoWorker {
		d.wg.Go(func() { d.worker.run(life) })
	}
	cfg.Logger.Info("autorecovery started", "id", cfg.ID, "auditor", !cfg.NoAuditor, "worker", !cfg.NoWorker)
	return d, nil
}

// Close stops the daemon: the worker releases its locks and the vote is
// withdrawn.
func (d *Daemon) Close() {
	d.cancel()
	d.wg.Wait()
}

// Manager returns the daemon's under-replication manager.
func (d *Daemon) Manager() *Manager { return d.mgr }

// Auditing reports whether this daemon is the cluster's auditor now.
func (d *Daemon) Auditing() bool { return d.auditing.Load() }

// Stats returns what the daemon's worker did so far.
func (d *Daemon) Stats() Stats { return d.worker.snapshot() }

// Marked returns how many markers this daemon's auditor wrote so far.
func (d *Daemon) Marked() int64 { return d.marked.Load() }

// elect votes in the auditor election until ctx ends, and runs the
// auditor whenever its vote is the lowest (BookKeeper's AuditorElector).
// A vote that vanishes (the session expired) is cast again.
func (d *Daemon) elect(ctx context.Context) {
	log := d.cfg.Logger
	backoff := 50 * time.Millisecond
	var vote string
	defer func() {
		if vote != "" {
			c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = d.cfg.Store.DeleteNode(c, vote, metadata.AnyVersion)
		}
	}()
	for ctx.Err() == nil {
		next, err := d.electOnce(ctx, vote)
		vote = next
		if err == nil {
			backoff = 50 * time.Millisecond
			continue
		}
		if ctx.Err() == nil {
			log.Warn("auditor election failed; retrying", "err", err)
			sleepCtx(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
		}
	}
}

// electOnce makes sure the vote exists, then either audits (lowest vote)
// until the vote goes, or waits for the vote before it to go. It returns
// the vote's path, "" if it is gone.
func (d *Daemon) electOnce(ctx context.Context, vote string) (string, error) {
	store, dir := d.cfg.Store, d.mgr.paths.Election()
	if vote != "" {
		if _, _, err := store.GetNode(ctx, vote); errors.Is(err, metadata.ErrNoNode) {
			vote = ""
		} else if err != nil {
			return vote, err
		}
	}
	if vote == "" {
		v, err := store.CreateNode(ctx, dir+"/"+votePrefix, EncodeVote(d.cfg.ID), metadata.NodeEphemeralSequential)
		if err != nil {
			return "", err
		}
		vote = v
	}
	names, err := store.NodeChildren(ctx, dir)
	if err != nil {
		return vote, err
	}
	names = slices.DeleteFunc(names, func(n string) bool { _, ok := parseVoteSeq(n); return !ok })
	slices.SortFunc(names, func(a, b string) int {
		x, _ := parseVoteSeq(a)
		y, _ := parseVoteSeq(b)
		return cmpInt(x, y)
	})
	mine := slices.Index(names, vote[len(dir)+1:])
	switch {
	case mine < 0:
		return "", nil // our vote went with an old session: vote again
	case mine == 0:
		// Like BookKeeper, the auditor writes its vote into the election
		// znode too, for tools that ask who the auditor is.
		if _, err := store.SetNode(ctx, dir, EncodeVote(d.cfg.ID), metadata.AnyVersion); err != nil {
			return vote, err
		}
		d.audit(ctx, vote)
		return vote, nil
	}
	exists, gone, err := store.NodeExistsWatch(ctx, dir+"/"+names[mine-1])
	if err != nil || !exists {
		return vote, err
	}
	select {
	case <-gone:
	case <-ctx.Done():
	}
	return vote, nil
}

// audit runs the auditor until ctx ends or the vote is gone.
func (d *Daemon) audit(ctx context.Context, vote string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.cfg.Logger.Info("elected auditor", "id", d.cfg.ID, "vote", vote)
	d.auditing.Store(true)
	defer d.auditing.Store(false)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		defer cancel()
		for ctx.Err() == nil {
			exists, changed, err := d.cfg.Store.NodeExistsWatch(ctx, vote)
			if err == nil && !exists {
				d.cfg.Logger.Warn("auditor's vote is gone; stepping down", "vote", vote)
				return
			}
			if err != nil {
				sleepCtx(ctx, 100*time.Millisecond)
				continue
			}
			<-changed
		}
	})
	a := &auditor{cfg: d.cfg, mgr: d.mgr, store: d.cfg.Store, log: d.cfg.Logger,
		marked: func(n int) {
			d.marked.Add(int64(n))
			if n > 0 { // BookKeeper records nothing for lost bookies without ledgers
				d.underReplicated.Record(int64(n), true)
			}
		},
		placed: func(r PlacementCheck) {
			d.mu.Lock()
			r.Runs = d.placement.Runs + 1
			d.placement = r
			d.mu.Unlock()
		},
		racks: &rackSource{static: d.cfg.Racks, path: d.cfg.RackInfoPath}}
	a.run(ctx)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
