package main

import (
	"context"
	"fmt"
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
		{"GET", "/api/v1/bookie/sanity", "", 200, "{\n  \"passed\" : true,"},
		{"GET", "/api/v1/bookie/cluster_info", "", 200, "{\n  \"auditorElected\" : false,"},
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

	// The stopped bookie's directories, as the shell's lastmark and
	// listfilesondisc show them.
	marks, err := bookie.ReadLastMarks(cfg)
	if err != nil || len(marks) != 1 || marks[0].LogID == 0 {
		t.Fatalf("marks after a clean stop: %v, %v", marks, err)
	}
	dirs := []string{"--journal-dirs", cfg.JournalDirs[0], "--ledger-dirs", cfg.LedgerDirs[0]}
	want := fmt.Sprintf("LastLogMark : Journal Id - %d(%x.txn), Pos - %d\n", marks[0].LogID, marks[0].LogID, marks[0].Offset)
	if out, err := runKeeper(t, t.Context(), append([]string{"bookie", "lastmark"}, dirs...)...); err != nil || out != want {
		t.Fatalf("keeper bookie lastmark: %q, %v; want %q", out, err, want)
	}
	out, err := runKeeper(t, t.Context(), append([]string{"bookie", "listfilesondisc", "-txn", "--index"}, dirs...)...)
	journalFile := filepath.Join(cfg.JournalDirs[0], "current", fmt.Sprintf("%x.txn", marks[0].LogID))
	if err != nil || !strings.HasPrefix(out, "--------- Printing the list of Journal Files ---------\n") ||
		!strings.Contains(out, "\n"+journalFile+"\n") ||
		!strings.HasSuffix(out, "\n\n--------- Printing the list of Index Files ---------\n\n") {
		t.Fatalf("keeper bookie listfilesondisc -txn --index: %q, %v", out, err)
	}
	if _, err := runKeeper(t, t.Context(), append([]string{"bookie", "listfilesondisc"}, dirs...)...); err == nil {
		t.Fatal("listfilesondisc without a kind succeeded")
	}
}
