package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/bookie"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// TestBookieHTTPAdminWired: a bookie run as `keeper bookie` runs it, with
// the admin API, gets the autorecovery calls and a ledger client for
// ledger/read.
func TestBookieHTTPAdminWired(t *testing.T) {
	cl := ledgertest.Start(t, 2)
	id, _ := written(t, mustRunLedger(t, cl, "", "write", "-E", "2", "-Qw", "2", "-Qa", "2", "--count", "3",
		"--size", "4", "--json"))
	dir := t.TempDir()
	cfg := bookie.Config{ListenAddr: "127.0.0.1:0", AdvertisedAddress: "127.0.0.1",
		JournalDirs: []string{filepath.Join(dir, "j")}, LedgerDirs: []string{filepath.Join(dir, "l")},
		FlushInterval: time.Hour, HTTPServerAddr: "127.0.0.1:0", MetadataServers: []string{cl.ZKAddr()},
		ZKSessionTimeout: testhost.Scale(10 * time.Second)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan *bookie.Bookie, 1)
	done := make(chan error, 1)
	go func() {
		done <- runBookie(ctx, cfg, slog.New(slog.DiscardHandler), func(b *bookie.Bookie) { ready <- b })
	}()
	var b *bookie.Bookie
	select {
	case b = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	base := "http://" + b.HTTPAddr().String()
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(out)
	}
	steps := []struct {
		method, path, body string
		code               int
		prefix             string
	}{
		{"PUT", "/api/v1/autorecovery/lost_bookie_recovery_delay", `{"delay_seconds":9}`, 200, "Success set"},
		{"GET", "/api/v1/autorecovery/lost_bookie_recovery_delay", "", 200, "lostBookieRecoveryDelay value: 9"},
		{"GET", "/api/v1/autorecovery/status", "", 200, "{\n  \"enabled\" : true\n}"},
		{"GET", "/api/v1/ledger/read?ledger_id=" + id, "", 200, "{\n  \"0\" : "},
	}
	for _, s := range steps {
		if code, body := call(s.method, s.path, s.body); code != s.code || !strings.HasPrefix(body, s.prefix) {
			t.Fatalf("%s %s: %d %q, want %d %q...", s.method, s.path, code, body, s.code, s.prefix)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
