package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"keeper/ledgerstore/bookietls"
	"keeper/ledgerstore/ledgerclient"
)

// benchReadFillWindow bounds the adds outstanding while the ledgers of a
// read run are written.
const benchReadFillWindow = 256

// runBenchLedgerRead measures reads of entries that are only in the
// bookies' entry logs: for each quorum, size and protocol, a ledger of
// --entries entries is written and closed, then a second ledger of as many
// entries (the push) is written and deleted, so that the first one's
// entries have been flushed out of the bookies' write caches (which holds
// when each bookie's share of the push, entries × size × Qw / E, exceeds
// its write cache: dbStorage_writeCacheMaxSizeMb, 64 MiB by default). With
// --drop-caches the kernel's page cache is then dropped (root only), so
// that each read goes to the disk: a cold read. A new client then reads
// --reads entries chosen at random, each once, with --inflight reads
// outstanding; the line gives the latency of one read, from the call to
// the entry.
func runBenchLedgerRead(ctx context.Context, cfg benchLedgerConfig, out io.Writer) error {
	if cfg.Entries < 1 || cfg.Reads < 1 || cfg.Reads > cfg.Entries {
		return fmt.Errorf("bench ledger: --op read needs 1 <= --reads (%d) <= --entries (%d)", cfg.Reads, cfg.Entries)
	}
	zkSec, err := metadataSecurity()
	if err != nil {
		return err
	}
	for _, q := range cfg.Quorums {
		for _, size := range cfg.Sizes {
			for _, p := range cfg.Protocols {
				base, secure := strings.CutSuffix(p, "+tls")
				lcfg := ledgerclient.Config{ZKServers: cfg.ZK, LedgersRoot: cfg.Root, Logger: newLogger(),
					UseV2WireProtocol: base == "v2", ZKSecurity: zkSec}
				if secure {
					lcfg.TLS = cfg.TLS
				} else {
					lcfg.TLS = bookietls.Settings{}
				}
				res, err := benchLedgerReadRun(ctx, lcfg, cfg, q, size)
				if err != nil {
					return fmt.Errorf("bench ledger read %v size %d %s: %w", q, size, p, err)
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

func benchLedgerReadRun(ctx context.Context, lcfg ledgerclient.Config, cfg benchLedgerConfig, q benchQuorum,
	size int) (*benchLedgerResult, error) {
	wc, err := ledgerclient.New(lcfg)
	if err != nil {
		return nil, err
	}
	defer wc.Close()
	password := []byte("keeper-bench")
	id, err := benchWriteLedger(ctx, wc, q, cfg.Entries, size, password)
	if id >= 0 {
		defer func() { _ = wc.Delete(context.WithoutCancel(ctx), id) }()
	}
	if err != nil {
		return nil, err
	}
	push, err := benchWriteLedger(ctx, wc, q, cfg.Entries, size, password)
	if push >= 0 {
		if derr := wc.Delete(context.WithoutCancel(ctx), push); err == nil && derr != nil {
			err = fmt.Errorf("delete the push ledger: %w", derr)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("push ledger: %w", err)
	}
	if cfg.DropCaches {
		if err := dropPageCache(); err != nil {
			return nil, err
		}
	}

	rc, err := ledgerclient.New(lcfg)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	h, err := rc.Open(ctx, id, password)
	if err != nil {
		return nil, err
	}
	order := rand.Perm(cfg.Entries)[:cfg.Reads]
	lat := make([]time.Duration, len(order))
	var next int
	var mu sync.Mutex
	var readErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range min(cfg.Inflight, len(order)) {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				failed := readErr != nil
				mu.Unlock()
				if i >= len(order) || failed || ctx.Err() != nil {
					return
				}
				e := int64(order[i])
				t0 := time.Now()
				got, err := h.Read(ctx, e, e)
				if err == nil && (len(got) != 1 || got[0].EntryID != e || len(got[0].Payload) != size) {
					err = fmt.Errorf("read entry %d: got %d entries", e, len(got))
				}
				if err != nil {
					mu.Lock()
					readErr = cmpErr(readErr, err)
					mu.Unlock()
					return
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if err := cmpErr(readErr, ctx.Err()); err != nil {
		return nil, err
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	res := &benchLedgerResult{Op: "ledger_read", Ledgers: 1, Ensemble: q.ensemble, WriteQuorum: q.writeQuorum,
		AckQuorum: q.ackQuorum, SizeBytes: size, Inflight: min(cfg.Inflight, len(order)), DurationSec: took.Seconds(),
		Entries: int64(len(order)), P50Us: pct(0.50), P99Us: pct(0.99), P999Us: pct(0.999),
		LedgerEntries: int64(cfg.Entries), Cold: cfg.DropCaches}
	res.EntriesPerSec = float64(res.Entries) / took.Seconds()
	res.MBPerSec = res.EntriesPerSec * float64(size) / 1e6
	return res, nil
}

// benchWriteLedger writes a new ledger of n entries of size bytes, with
// up to benchReadFillWindow adds outstanding, and closes it. It returns
// the ledger's id (−1 if none was created).
func benchWriteLedger(ctx context.Context, c *ledgerclient.Client, q benchQuorum, n, size int,
	password []byte) (int64, error) {
	w, err := c.Create(ctx, ledgerclient.CreateOptions{Ensemble: q.ensemble, WriteQuorum: q.writeQuorum,
		AckQuorum: q.ackQuorum, Password: password})
	if err != nil {
		return -1, err
	}
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(rand.Uint32())
	}
	slots := make(chan struct{}, benchReadFillWindow)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var addErr error
	for range n {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		mu.Lock()
		failed := addErr != nil
		mu.Unlock()
		if ctx.Err() != nil || failed {
			break
		}
		wg.Add(1)
		w.AppendAsync(payload, func(_ int64, err error) {
			defer wg.Done()
			<-slots
			if err != nil {
				mu.Lock()
				addErr = cmpErr(addErr, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	cerr := w.Close(context.WithoutCancel(ctx))
	return w.ID(), errors.Join(addErr, ctx.Err(), cerr)
}

// dropPageCache writes the dirty pages of every file system out and drops
// the kernel's clean page cache (Linux, root only), so that the next read
// of a file goes to the disk.
func dropPageCache() error {
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1\n"), 0); err != nil {
		return fmt.Errorf("--drop-caches: %w (it needs Linux and root)", err)
	}
	return nil
}
