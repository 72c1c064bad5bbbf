package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"keeper/ledgerstore/autorecovery"
	"keeper/ledgerstore/bookie"
	"keeper/ledgerstore/bookie/httpadmin"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/metadata"
)

// adminClient is the ledger client of a bookie's HTTP admin API: opened
// at first use (ledger/read, a recovery), on a session of its own, and
// closed after the bookie stops. The bookie cannot open it itself: it does
// not import the ledger client, whose tests run bookies.
type adminClient struct {
	cfg ledgerclient.Config

	mu     sync.Mutex
	c      *ledgerclient.Client
	closed bool
}

var errAdminClientClosed = errors.New("the admin API's ledger client is closed")

func (a *adminClient) get() (*ledgerclient.Client, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, errAdminClientClosed
	}
	if a.c == nil {
		c, err := ledgerclient.New(a.cfg)
		if err != nil {
			return nil, err
		}
		a.c = c
	}
	return a.c, nil
}

// OpenNoRecovery opens a ledger for /api/v1/ledger/read.
func (a *adminClient) OpenNoRecovery(ctx context.Context, id int64, password []byte) (httpadmin.LedgerReader, error) {
	c, err := a.get()
	if err != nil {
		return nil, err
	}
	h, err := c.OpenNoRecovery(ctx, id, password)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// SanityTest runs /api/v1/bookie/sanity's test.
func (a *adminClient) SanityTest(ctx context.Context, bookie ledger.BookieID, entries int) error {
	c, err := a.get()
	if err != nil {
		return err
	}
	return c.SanityTest(ctx, bookie, entries)
}

// Close closes the client, if it was opened.
func (a *adminClient) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	if a.c != nil {
		a.c.Close()
		a.c = nil
	}
}

// wireHTTPAdmin gives a bookie with the admin API what its autorecovery
// and ledger/read endpoints need; the returned function closes it after
// the bookie has stopped.
func wireHTTPAdmin(cfg *bookie.Config, logger *slog.Logger) (closeFn func()) {
	if cfg.HTTPServerAddr == "" || len(cfg.MetadataServers) == 0 {
		return func() {}
	}
	logger = logger.With("component", "httpadmin")
	lc := &adminClient{cfg: ledgerclient.Config{ZKServers: cfg.MetadataServers, LedgersRoot: cfg.LedgersRoot,
		ZKSessionTimeout: cfg.ZKSessionTimeout, Logger: logger, TLS: cfg.ClientTLS,
		ZKSecurity: cfg.MetadataSecurity}}
	if cfg.HTTPRecovery == nil {
		cfg.HTTPRecovery = func(st *metadata.Store, id string) httpadmin.Recovery {
			return autorecovery.NewOperator(st, id, logger, lc.get)
		}
	}
	if cfg.HTTPLedgers == nil {
		cfg.HTTPLedgers = lc
	}
	return lc.Close
}
