package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/autorecovery"
	"keeper/ledgerstore/bookie"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// TestBookieAutorecoveryMetrics: a bookie that runs autorecovery exports
// its auditor's figures with its own metrics, under BookKeeper's names.
// A closed E2/Qw2 ledger on two bookies of one rack, with a third bookie
// in another rack, does not adhere to the rack-aware policy; after the
// auditor's placement check the gauge says 1.
func TestBookieAutorecoveryMetrics(t *testing.T) {
	cl := ledgertest.Start(t, 2)
	written(t, mustRunLedger(t, cl, "", "write", "-E", "2", "-Qw", "2", "-Qa", "2", "--count", "3", "--size", "4", "--json"))
	dir := t.TempDir()
	cfg := bookie.Config{ListenAddr: "127.0.0.1:0", AdvertisedAddress: "127.0.0.1",
		JournalDirs: []string{filepath.Join(dir, "j")}, LedgerDirs: []string{filepath.Join(dir, "l")},
		FlushInterval: time.Hour, MetricsAddr: "127.0.0.1:0", MetadataServers: []string{cl.ZKAddr()},
		ZKSessionTimeout: testhost.Scale(10 * time.Second)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan *bookie.Bookie, 1)
	done := make(chan error, 1)
	logger := slog.New(slog.DiscardHandler)
	go func() { done <- runBookie(ctx, cfg, logger, func(b *bookie.Bookie) { ready <- b }) }()
	var b *bookie.Bookie
	select {
	case b = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	racks := map[ledger.BookieID]string{ledger.BookieID(b.ID()): "/r2"}
	for _, id := range cl.IDs() {
		racks[ledger.BookieID(id)] = "/r1"
	}
	stop, err := bookieAutorecovery(ctx, b, cfg, autorecovery.Config{NoWorker: true, Racks: racks,
		AuditorPeriodicPlacementPolicyCheckInterval: 50 * time.Millisecond}, logger)
	if err != nil {
		t.Fatal(err)
	}
	stop = sync.OnceFunc(stop)
	defer stop()

	url := "http://" + b.MetricsAddr().String() + "/metrics"
	gauge := "replication_" + autorecovery.MetricNotAdhering + " 1\n"
	var body string
	for deadline := time.Now().Add(testhost.Scale(30 * time.Second)); !strings.Contains(body, gauge); {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the bookie's metrics after the placement check:\n%s", gauge, body)
		}
		time.Sleep(20 * time.Millisecond)
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		body = string(data)
	}
	for _, want := range []string{
		"# TYPE replication_auditor_NUM_LEDGERS_NOT_ADHERING_TO_PLACEMENT_POLICY gauge\n",
		"# TYPE replication_auditor_NUM_UNDER_REPLICATED_LEDGERS summary\n",
		"# TYPE replication_replication_worker_NUM_FULL_OR_PARTIAL_LEDGERS_REPLICATED counter\n",
		"\nbookkeeper_server_ADD_ENTRY_REQUEST_count{success=\"true\"} ", // the bookie's own, beside them
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	stop()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
