package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/bookietls"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
)

// benchRecoverFillWindow bounds the adds outstanding while a ledger to
// recover is filled.
const benchRecoverFillWindow = 512

// runBenchLedgerRecover measures recovery (Open) of ledgers whose writer
// died with every entry beyond the LAC the bookies know: for each round,
// quorum, size, protocol and recovery read batch size in turn, one ledger
// of cfg.Entries entries is filled and then opened with recovery by a new
// client. The batch sizes alternate within a round, so that each is
// measured under the same load.
func runBenchLedgerRecover(ctx context.Context, cfg benchLedgerConfig, out io.Writer) error {
	if cfg.Entries < 1 || cfg.Rounds < 1 {
		return errors.New("bench ledger: --entries and --rounds must be positive")
	}
	for _, b := range cfg.RecoveryBatches {
		if b < 1 || b > ledgerclient.MaxRecoveryReadBatchSize {
			return fmt.Errorf("bench ledger: recovery read batch size %d out of range 1..%d", b,
				ledgerclient.MaxRecoveryReadBatchSize)
		}
	}
	zkSec, err := metadataSecurity()
	if err != nil {
		return err
	}
	base := ledgerclient.Config{ZKServers: cfg.ZK, LedgersRoot: cfg.Root, Logger: newLogger(), ZKSecurity: zkSec}
	if cfg.TLS.Enabled {
		base.TLS = cfg.TLS
	}
	setup, err := ledgerclient.New(base)
	if err != nil {
		return err
	}
	defer setup.Close()
	for round := range cfg.Rounds {
		for _, q := range cfg.Quorums {
			for _, size := range cfg.Sizes {
				for _, p := range cfg.Protocols {
					for _, batch := range cfg.RecoveryBatches {
						lcfg := base
						lcfg.UseV2WireProtocol = strings.HasPrefix(p, "v2")
						if !strings.HasSuffix(p, "+tls") {
							lcfg.TLS = bookietls.Settings{}
						}
						lcfg.RecoveryReadBatchSize = batch
						res, err := benchLedgerRecoverRun(ctx, setup, lcfg, cfg, q, size)
						if err != nil {
							return fmt.Errorf("bench ledger recover %v size %d batch %d (round %d): %w", q, size, batch,
								round+1, err)
						}
						res.Protocol, res.RecoveryReadBatchSize = p, batch
						if err := printJSON(out, res); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	return nil
}

// benchLedgerRecoverRun fills one ledger and times its recovery by a
// client configured as lcfg; the ledger is deleted afterwards.
func benchLedgerRecoverRun(ctx context.Context, setup *ledgerclient.Client, lcfg ledgerclient.Config,
	cfg benchLedgerConfig, q benchQuorum, size int) (*benchLedgerResult, error) {
	password := []byte("keeper-bench")
	w, err := setup.Create(ctx, ledgerclient.CreateOptions{Ensemble: q.ensemble, WriteQuorum: q.writeQuorum,
		AckQuorum: q.ackQuorum, Password: password})
	if err != nil {
		return nil, err
	}
	id := w.ID()
	defer func() { _ = setup.Delete(context.WithoutCancel(ctx), id) }()
	if err := benchFillUnconfirmed(ctx, setup, w.Metadata(), id, cfg.Entries, size, password); err != nil {
		return nil, err
	}
	rc, err := ledgerclient.New(lcfg)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	start := time.Now()
	h, err := rc.Open(ctx, id, password)
	took := time.Since(start)
	if err != nil {
		return nil, err
	}
	if md := h.Metadata(); md.State != ledger.StateClosed || md.LastEntryID != int64(cfg.Entries-1) {
		return nil, fmt.Errorf("ledger %d recovered to %+v, want closed at entry %d", id, md, cfg.Entries-1)
	}
	res := &benchLedgerResult{Op: "ledger_recover", Ledgers: 1, Ensemble: q.ensemble, WriteQuorum: q.writeQuorum,
		AckQuorum: q.ackQuorum, SizeBytes: size, DurationSec: took.Seconds(), Entries: int64(cfg.Entries)}
	res.EntriesPerSec = float64(cfg.Entries) / took.Seconds()
	res.MBPerSec = res.EntriesPerSec * float64(size) / 1e6
	return res, nil
}

// benchFillUnconfirmed stores entries 0..n-1 of ledger id on their write
// sets as a writer that died before any LAC reached the bookies would
// have left them: every entry carries LAC −1, so recovery must read all
// of them forward and re-add them.
func benchFillUnconfirmed(ctx context.Context, c *ledgerclient.Client, md ledger.Metadata, id int64, n, size int,
	password []byte) error {
	conns := map[ledger.BookieID]*bookierpc.Client{}
	defer func() {
		for _, cl := range conns {
			cl.Close()
		}
	}()
	for _, b := range md.LastSegment().Bookies {
		addr, err := c.BookieAddress(ctx, b)
		if err != nil {
			return err
		}
		cl, err := bookierpc.DialWith(ctx, addr, c.BookieDialOptions())
		if err != nil {
			return err
		}
		conns[b] = cl
	}
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(rand.Uint32())
	}
	var macKey []byte
	if md.Digest() == bkproto.DigestHMAC {
		k := bkproto.MacKey(password)
		macKey = k[:]
	}
	mk := bkproto.MasterKey(password)
	var inflight []<-chan bookierpc.Result
	wait := func(ch <-chan bookierpc.Result) error {
		select {
		case r := <-ch:
			return bookierpc.StatusErr(r.Resp, r.Err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for e := range int64(n) {
		body := bkproto.EncodeEntry(id, e, bkproto.LastAddConfirmed, (e+1)*int64(size), md.Digest(), macKey, payload)
		for _, b := range md.WriteSetBookies(e) {
			inflight = append(inflight, conns[b].Go(bookierpc.AddRequest(id, e, mk[:], body, false)))
		}
		for len(inflight) > benchRecoverFillWindow {
			if err := wait(inflight[0]); err != nil {
				return fmt.Errorf("fill entry: %w", err)
			}
			inflight = inflight[1:]
		}
	}
	for _, ch := range inflight {
		if err := wait(ch); err != nil {
			return fmt.Errorf("fill entry: %w", err)
		}
	}
	return nil
}
