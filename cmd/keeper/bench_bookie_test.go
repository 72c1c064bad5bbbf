package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"keeper/ledgerstore/bookie"
)

// TestBenchBookieInterrupted starts an hour-long `bench bookie` run, waits
// for a progress line that counts acknowledged adds, and interrupts it: the
// run prints what it measured, marked interrupted, and says so in its
// error.
func TestBenchBookieInterrupted(t *testing.T) {
	dir := t.TempDir()
	bctx, stopBookie := context.WithCancel(t.Context())
	defer stopBookie()
	ready := make(chan *bookie.Bookie, 1)
	bookieDone := make(chan error, 1)
	go func() {
		cfg := bookie.Config{ListenAddr: "127.0.0.1:0", JournalDirs: []string{filepath.Join(dir, "j")},
			LedgerDirs: []string{filepath.Join(dir, "l")}, FlushInterval: time.Hour}
		bookieDone <- runBookie(bctx, cfg, slog.New(slog.DiscardHandler), func(b *bookie.Bookie) { ready <- b })
	}()
	var b *bookie.Bookie
	select {
	case b = <-ready:
	case err := <-bookieDone:
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out strings.Builder
	var progress syncBuffer
	cfg := benchBookieConfig{Addr: b.Addr().String(), Protocols: []string{"v3"}, Sizes: []int{100}, Ledgers: []int{2},
		Inflight: 4, Connections: 1, Duration: time.Hour, Progress: &progress}
	done := make(chan error, 1)
	go func() { done <- runBenchBookie(ctx, cfg, &out) }()
	acked := regexp.MustCompile(`bench bookie v3 size 100 ledgers 2: +\d+s measuring: ([1-9]\d*) adds acknowledged`)
	waitForProgress(t, &progress, acked.MatchString, done, &out)
	cancel()
	err := <-done
	var r benchBookieResult
	if jerr := json.Unmarshal([]byte(out.String()), &r); err == nil || !strings.Contains(err.Error(), "interrupted") ||
		jerr != nil || !r.Interrupted || r.Adds == 0 || r.DurationSec <= 0 || r.DurationSec >= time.Hour.Seconds() {
		t.Fatalf("interrupted run: err %v, output %q (%v)", err, out.String(), jerr)
	}
	stopBookie()
	<-bookieDone
}
