package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"keeper/ledgerstore/ledgerclient"
)

// benchReadFillWindow bounds the adds outstanding while the ledgers of a
// read run are written.
const benchReadFillWindow = 256

// runBenchLedgerRead measures reads of entries that are only in the
// bookies' entry logs: for each quorum, size and protocol, a ledger of
// --entries entries is written together with a second one of as many (their
// adds interleaved, so that the entry logs hold both), then a third of as
// many is written after them (the push), and the second and third are
// deleted. The push flushes the first ledger's entries out of the bookies'
// write caches, which holds when each bookie's share of it, entries × size
// × Qw / E, exceeds its write cache (dbStorage_writeCacheMaxSizeMb, 64 MiB
// by default). With --drop-caches the kernel's page cache is then dropped
// (root only), so that each read goes to the disk: a cold read. A new
// client then reads --reads entries chosen at random, each once, with
// --inflight reads outstanding; the line gives the latency of one read,
// from the call to the entry.
//
// With --bookie-http (the bookies' HTTP admin servers, host:port) two more
// lines follow: the same number of random reads with nothing else running
// (phase "idle"), then random reads for as long as a forced major
// compaction runs on every one of those bookies (phase "compaction", asked
// for with PUT /api/v1/bookie/gc and followed with gc_details): the
// deleted second ledger leaves the entry logs half live, so compaction
// moves the first ledger's entries while they are read.
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
				lines, err := benchLedgerReadRun(ctx, benchProtocolClientConfig(cfg, p, zkSec), cfg, q, size)
				if err != nil {
					return fmt.Errorf("bench ledger read %v size %d %s: %w", q, size, p, err)
				}
				for _, res := range lines {
					res.Protocol = p
					if err := printJSON(out, res); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func benchLedgerReadRun(ctx context.Context, lcfg ledgerclient.Config, cfg benchLedgerConfig, q benchQuorum,
	size int) ([]*benchLedgerResult, error) {
	wc, err := ledgerclient.New(lcfg)
	if err != nil {
		return nil, err
	}
	defer wc.Close()
	password := []byte("keeper-bench")
	ids, err := benchWriteLedgers(ctx, wc, q, 2, cfg.Entries, size, password)
	if len(ids) > 0 {
		defer func() { _ = wc.Delete(context.WithoutCancel(ctx), ids[0]) }()
	}
	var garbage []int64
	if len(ids) > 1 {
		garbage = append(garbage, ids[1:]...)
	}
	if err == nil {
		var push []int64
		push, err = benchWriteLedgers(ctx, wc, q, 1, cfg.Entries, size, password)
		garbage = append(garbage, push...)
	}
	for _, g := range garbage {
		if derr := wc.Delete(context.WithoutCancel(ctx), g); err == nil && derr != nil {
			err = fmt.Errorf("delete ledger %d: %w", g, derr)
		}
	}
	if err != nil {
		return nil, err
	}
	id := ids[0]
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
	lat, took, err := benchRandomReads(ctx, h, size, cfg.Inflight, func(i int) (int64, bool) {
		if i >= len(order) {
			return 0, false
		}
		return int64(order[i]), true
	})
	if err != nil {
		return nil, err
	}
	phase := "flushed"
	if cfg.DropCaches {
		phase = "cold"
	}
	res := benchReadResult(q, size, min(cfg.Inflight, len(order)), cfg.Entries, phase, lat, took)
	if len(cfg.BookieHTTP) == 0 {
		return []*benchLedgerResult{res}, nil
	}
	out := []*benchLedgerResult{res}
	order = rand.Perm(cfg.Entries)[:cfg.Reads]
	if lat, took, err = benchRandomReads(ctx, h, size, cfg.Inflight, func(i int) (int64, bool) {
		if i >= len(order) {
			return 0, false
		}
		return int64(order[i]), true
	}); err != nil {
		return nil, err
	}
	out = append(out, benchReadResult(q, size, min(cfg.Inflight, len(order)), cfg.Entries, "idle", lat, took))
	res, err = benchReadsDuringCompaction(ctx, h, cfg, q, size)
	if err != nil {
		return nil, err
	}
	return append(out, res), nil
}

// benchRandomReads reads entry pick(i) for i = 0, 1, ... with inflight
// reads outstanding until pick says to stop, checking each entry's length,
// and returns every read's latency and the time it all took.
func benchRandomReads(ctx context.Context, h *ledgerclient.ReadHandle, size, inflight int,
	pick func(i int) (int64, bool)) ([]time.Duration, time.Duration, error) {
	var next int
	var mu sync.Mutex
	var lat []time.Duration
	var readErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range inflight {
		wg.Go(func() {
			for {
				mu.Lock()
				e, ok := pick(next)
				next++
				failed := readErr != nil
				mu.Unlock()
				if !ok || failed || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				got, err := h.Read(ctx, e, e)
				if err == nil && (len(got) != 1 || got[0].EntryID != e || len(got[0].Payload) != size) {
					err = fmt.Errorf("read entry %d: got %d entries", e, len(got))
				}
				mu.Lock()
				if err != nil {
					readErr = cmpErr(readErr, err)
				} else {
					lat = append(lat, time.Since(t0))
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if err := cmpErr(readErr, ctx.Err()); err != nil {
		return nil, took, err
	}
	if len(lat) == 0 {
		return nil, took, errors.New("no read was made")
	}
	return lat, took, nil
}

// benchReadResult is a read line: latencies of len(lat) reads of a ledger
// of entries entries, made in took.
func benchReadResult(q benchQuorum, size, inflight, entries int, phase string, lat []time.Duration,
	took time.Duration) *benchLedgerResult {
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	res := &benchLedgerResult{Op: "ledger_read", Ledgers: 1, Ensemble: q.ensemble, WriteQuorum: q.writeQuorum,
		AckQuorum: q.ackQuorum, SizeBytes: size, Inflight: inflight, DurationSec: took.Seconds(),
		Entries: int64(len(lat)), P50Us: pct(0.50), P99Us: pct(0.99), P999Us: pct(0.999),
		LedgerEntries: int64(entries), Phase: phase}
	res.EntriesPerSec = float64(res.Entries) / took.Seconds()
	res.MBPerSec = res.EntriesPerSec * float64(size) / 1e6
	return res
}

// benchGCDetails is what the read bench needs of a bookie's
// /api/v1/bookie/gc_details.
type benchGCDetails struct {
	ForceCompacting        bool  `json:"forceCompacting"`
	MajorCompactionCounter int64 `json:"majorCompactionCounter"`
}

// benchReadsDuringCompaction asks every --bookie-http bookie for a forced
// major compaction and reads random entries until each has finished one.
func benchReadsDuringCompaction(ctx context.Context, h *ledgerclient.ReadHandle, cfg benchLedgerConfig,
	q benchQuorum, size int) (*benchLedgerResult, error) {
	hc := &http.Client{Timeout: 10 * time.Second}
	before := make([]int64, len(cfg.BookieHTTP))
	logsBefore := 0
	for i, addr := range cfg.BookieHTTP {
		d, err := benchGCState(ctx, hc, addr)
		if err != nil {
			return nil, err
		}
		before[i] = d.MajorCompactionCounter
		n, err := benchEntryLogs(ctx, hc, addr)
		if err != nil {
			return nil, err
		}
		logsBefore += n
	}
	start := time.Now()
	for _, addr := range cfg.BookieHTTP {
		if err := benchHTTP(ctx, hc, http.MethodPut, addr, "/api/v1/bookie/gc",
			`{"forceMajor": true, "forceMinor": false}`, nil); err != nil {
			return nil, err
		}
	}
	var finished atomic.Bool
	var took time.Duration
	watchErr := make(chan error, 1)
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		defer finished.Store(true)
		for {
			select {
			case <-ctx.Done():
				watchErr <- ctx.Err()
				return
			case <-tick.C:
			}
			done := true
			for i, addr := range cfg.BookieHTTP {
				d, err := benchGCState(ctx, hc, addr)
				if err != nil {
					watchErr <- err
					return
				}
				done = done && d.MajorCompactionCounter > before[i] && !d.ForceCompacting
			}
			if done {
				took = time.Since(start)
				watchErr <- nil
				return
			}
		}
	}()
	lat, readTook, err := benchRandomReads(ctx, h, size, cfg.Inflight, func(int) (int64, bool) {
		return rand.Int64N(int64(cfg.Entries)), !finished.Load()
	})
	if werr := <-watchErr; werr != nil {
		return nil, fmt.Errorf("compaction: %w", werr)
	}
	if err != nil {
		return nil, err
	}
	logsAfter := 0
	for _, addr := range cfg.BookieHTTP {
		n, err := benchEntryLogs(ctx, hc, addr)
		if err != nil {
			return nil, err
		}
		logsAfter += n
	}
	res := benchReadResult(q, size, cfg.Inflight, cfg.Entries, "compaction", lat, readTook)
	res.CompactionSec, res.EntryLogsBefore, res.EntryLogsAfter = took.Seconds(), logsBefore, logsAfter
	return res, nil
}

func benchGCState(ctx context.Context, hc *http.Client, addr string) (benchGCDetails, error) {
	var ds []benchGCDetails
	if err := benchHTTP(ctx, hc, http.MethodGet, addr, "/api/v1/bookie/gc_details", "", &ds); err != nil {
		return benchGCDetails{}, err
	}
	if len(ds) == 0 {
		return benchGCDetails{}, fmt.Errorf("bookie %s: gc_details is empty", addr)
	}
	return ds[0], nil
}

// benchEntryLogs counts a bookie's entry log files.
func benchEntryLogs(ctx context.Context, hc *http.Client, addr string) (int, error) {
	var files map[string]string
	if err := benchHTTP(ctx, hc, http.MethodGet, addr, "/api/v1/bookie/list_disk_file?file_type=entrylog", "",
		&files); err != nil {
		return 0, err
	}
	n := 0
	for _, v := range files {
		n += len(strings.FieldsFunc(v, func(r rune) bool { return r == '\t' }))
	}
	return n, nil
}

// benchHTTP calls a bookie's HTTP admin API and decodes a JSON answer
// into out (if not nil).
func benchHTTP(ctx context.Context, hc *http.Client, method, addr, path, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, addr+path, resp.Status, strings.TrimSpace(string(data)))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: %w", method, addr+path, err)
	}
	return nil
}

// benchWriteLedgers writes k new ledgers of n entries of size bytes each,
// their adds interleaved, with up to benchReadFillWindow adds outstanding,
// and closes them. It returns the ids of the ledgers it created.
func benchWriteLedgers(ctx context.Context, c *ledgerclient.Client, q benchQuorum, k, n, size int,
	password []byte) ([]int64, error) {
	var ids []int64
	var ws []*ledgerclient.Writer
	for range k {
		w, err := c.Create(ctx, ledgerclient.CreateOptions{Ensemble: q.ensemble, WriteQuorum: q.writeQuorum,
			AckQuorum: q.ackQuorum, Password: password})
		if err != nil {
			return ids, err
		}
		ids, ws = append(ids, w.ID()), append(ws, w)
	}
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(rand.Uint32())
	}
	slots := make(chan struct{}, benchReadFillWindow)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var addErr error
fill:
	for range n {
		for _, w := range ws {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
			}
			mu.Lock()
			failed := addErr != nil
			mu.Unlock()
			if ctx.Err() != nil || failed {
				break fill
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
	}
	wg.Wait()
	errs := []error{addErr, ctx.Err()}
	for _, w := range ws {
		errs = append(errs, w.Close(context.WithoutCancel(ctx)))
	}
	return ids, errors.Join(errs...)
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
