package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"keeper/coordination/zkclient"
	"keeper/ledgerstore/ledgerclient"
)

// runBenchLedgerTail measures how soon tailing readers receive what a
// writer adds: for each quorum, size and protocol, a writer keeps
// --inflight adds outstanding on a new ledger while --tail readers follow
// it with long polls (ReadHandle.Tail), and each line gives the latency
// from an add's acknowledgement (its callback) to a reader receiving the
// entry, over every reader.
func runBenchLedgerTail(ctx context.Context, cfg benchLedgerConfig, out io.Writer) error {
	if cfg.Tailers < 1 {
		return errors.New("bench ledger: --tail must be positive")
	}
	zkSec, err := metadataSecurity()
	if err != nil {
		return err
	}
	for _, q := range cfg.Quorums {
		for _, size := range cfg.Sizes {
			for _, p := range cfg.Protocols {
				lcfg := benchProtocolClientConfig(cfg, p, zkSec)
				lcfg.MaxPendingAdds = cfg.Inflight
				res, err := benchLedgerTailRun(ctx, lcfg, cfg, q, size)
				if err != nil {
					return fmt.Errorf("bench ledger tail %v size %d %s: %w", q, size, p, err)
				}
				res.Protocol = p
				if err := printJSON(out, res); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// benchTailTimes records, per entry id, when something happened to it
// (zero: not yet). It is safe for concurrent use.
type benchTailTimes struct {
	mu sync.Mutex
	at []time.Time
}

func (b *benchTailTimes) set(id int64, t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for int64(len(b.at)) <= id {
		b.at = append(b.at, time.Time{})
	}
	b.at[id] = t
}

func (b *benchTailTimes) get(id int64) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id < 0 || id >= int64(len(b.at)) {
		return time.Time{}
	}
	return b.at[id]
}

func benchLedgerTailRun(ctx context.Context, lcfg ledgerclient.Config, cfg benchLedgerConfig, q benchQuorum,
	size int) (*benchLedgerResult, error) {
	wcfg := lcfg
	if !lcfg.UseV2WireProtocol {
		wcfg.ExplicitLACInterval = cfg.ExplicitLAC
	}
	wc, err := ledgerclient.New(wcfg)
	if err != nil {
		return nil, err
	}
	defer wc.Close()
	rc, err := ledgerclient.New(lcfg)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	password := []byte("keeper-bench")
	w, err := wc.Create(ctx, ledgerclient.CreateOptions{Ensemble: q.ensemble, WriteQuorum: q.writeQuorum,
		AckQuorum: q.ackQuorum, Password: password})
	if err != nil {
		return nil, err
	}
	id := w.ID()
	defer func() { _ = wc.Delete(context.WithoutCancel(ctx), id) }()

	// The readers start before the first add and end with the ledger's
	// close (or the context).
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	received := make([]*benchTailTimes, cfg.Tailers)
	errs := make([]error, cfg.Tailers)
	var readers sync.WaitGroup
	for i := range cfg.Tailers {
		h, err := rc.OpenNoRecovery(ctx, id, password)
		if err != nil {
			return nil, err
		}
		received[i] = &benchTailTimes{}
		readers.Add(1)
		go func() {
			defer readers.Done()
			for e, err := range h.Tail(tctx, 0) {
				if err != nil {
					errs[i] = err
					return
				}
				received[i].set(e.EntryID, time.Now())
			}
		}()
	}

	acked := &benchTailTimes{}
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(rand.Uint32())
	}
	slots := make(chan struct{}, cfg.Inflight)
	var adds sync.WaitGroup
	var addErr error
	var addMu sync.Mutex
	start := time.Now()
	from, to := start.Add(cfg.Warmup), start.Add(cfg.Warmup+cfg.Duration)
	first, last := int64(-1), int64(-1) // the entries sent within [from, to)
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		sent := time.Now()
		addMu.Lock()
		failed := addErr != nil
		addMu.Unlock()
		if !sent.Before(to) || failed {
			<-slots
			break
		}
		adds.Add(1)
		w.AppendAsync(payload, func(e int64, err error) {
			defer adds.Done()
			now := time.Now()
			<-slots
			if err != nil {
				addMu.Lock()
				addErr = cmpErr(addErr, err)
				addMu.Unlock()
				return
			}
			acked.set(e, now)
			if !sent.Before(from) {
				addMu.Lock()
				if first < 0 || e < first {
					first = e
				}
				last = max(last, e)
				addMu.Unlock()
			}
		})
	}
	adds.Wait()
	stopped := time.Now()
	if err := w.Close(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("close: %w", err)
	}
	readers.Wait()
	if err := errors.Join(append(errs, addErr, ctx.Err())...); err != nil {
		return nil, err
	}
	if first < 0 || last <= first {
		return nil, errors.New("nothing acknowledged in the measured interval")
	}
	// The last entry of the run is not measured: readers may learn of it
	// only from the close.
	var lat []time.Duration
	for e := first; e < last; e++ {
		a := acked.get(e)
		for _, r := range received {
			if got := r.get(e); !a.IsZero() && !got.IsZero() {
				lat = append(lat, max(0, got.Sub(a)))
			}
		}
	}
	if len(lat) == 0 {
		return nil, errors.New("no entry was both acknowledged and received")
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	if stopped.After(to) {
		stopped = to
	}
	measured := stopped.Sub(from)
	res := &benchLedgerResult{Op: "ledger_tail", Ledgers: 1, Ensemble: q.ensemble, WriteQuorum: q.writeQuorum,
		AckQuorum: q.ackQuorum, SizeBytes: size, Inflight: cfg.Inflight, DurationSec: measured.Seconds(),
		Entries: last - first, P50Us: pct(0.50), P99Us: pct(0.99), P999Us: pct(0.999), Tailers: cfg.Tailers}
	res.EntriesPerSec = float64(res.Entries) / measured.Seconds()
	res.MBPerSec = res.EntriesPerSec * float64(size) / 1e6
	return res, nil
}

// cmpErr keeps the first error.
func cmpErr(have, err error) error {
	if have != nil {
		return have
	}
	return err
}

// benchProtocolClientConfig is the ledger client configuration of a run
// over protocol p ("v3", "v2", either with "+tls": then over TLS as
// --client-conf says).
func benchProtocolClientConfig(cfg benchLedgerConfig, p string, zkSec zkclient.Security) ledgerclient.Config {
	base, secure := strings.CutSuffix(p, "+tls")
	lcfg := ledgerclient.Config{ZKServers: cfg.ZK, LedgersRoot: cfg.Root, Logger: newLogger(),
		UseV2WireProtocol: base == "v2", ZKSecurity: zkSec}
	if secure {
		lcfg.TLS = cfg.TLS
	}
	return lcfg
}
