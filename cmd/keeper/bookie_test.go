package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookie"
	"keeper/ledgerstore/bookierpc"
)

func TestBookieConfigFileAndFlags(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "bookkeeper.conf")
	text := "bookiePort=3199\njournalDirectories=/j\nledgerDirectories=/l1,/l2\n" +
		"metadataServiceUri=zk+hierarchical://z1:2181;z2:2181/ledgers\ndiskUsageThreshold=0.9\nunusedKey=1\n"
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, flags := bookieCommand()
	if err := cmd.ParseFlags([]string{"--ledger-dirs", "/x,/y", "--listen-host", "127.0.0.1", "--ledgers-root", "/bk"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadBookieConfig(cmd, []string{conf}, flags, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ListenAddr != "127.0.0.1:3199" || !reflect.DeepEqual(cfg.JournalDirs, []string{"/j"}) ||
		!reflect.DeepEqual(cfg.LedgerDirs, []string{"/x", "/y"}) || cfg.LedgersRoot != "/bk" ||
		!reflect.DeepEqual(cfg.MetadataServers, []string{"z1:2181", "z2:2181"}) || cfg.DiskUsageThreshold != 0.9 {
		t.Fatalf("config %+v", cfg)
	}

	bad := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(bad, []byte(text+"gcWaitTime=soon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = runKeeper(t, context.Background(), "bookie", bad)
	if err == nil || !strings.Contains(err.Error(), "gcWaitTime") {
		t.Fatalf("invalid gcWaitTime: %v", err)
	}
}

// TestBookieCommandAndTools runs a bookie in process, adds, fences and
// writes an explicit LAC, stops it, and dumps its journal and entry logs
// with the tools.
func TestBookieCommandAndTools(t *testing.T) {
	dir := t.TempDir()
	journalDir, ledgerDir := filepath.Join(dir, "journal"), filepath.Join(dir, "ledgers")
	cfg := bookie.Config{ListenAddr: "127.0.0.1:0", JournalDirs: []string{journalDir}, LedgerDirs: []string{ledgerDir},
		FlushInterval: time.Hour}
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
	c, err := bookierpc.Dial(ctx, b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	key := bkproto.MasterKey([]byte("pw"))
	for e := int64(0); e < 5; e++ {
		body := bkproto.EncodeEntry(1, e, e-1, 10*(e+1), bkproto.DigestCRC32C, nil, []byte("0123456789"))
		if err := c.Add(ctx, 1, e, key[:], body, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.FenceRead(ctx, 1, -1, key[:]); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteLAC(ctx, 1, 4, key[:], bkproto.EncodeLAC(1, 4, bkproto.DigestCRC32C, nil)); err != nil {
		t.Fatal(err)
	}

	checkBenchBookie(t, ctx, b.Addr().String(), dir)
	c.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	jout, err := runTool(t, "journal", "dump", journalDir, "--ledger-dirs", ledgerDir)
	if err != nil {
		t.Fatalf("journal dump: %v\n%s", err, jout)
	}
	for _, want := range []string{"master-key ledger=1 key=", "entry ledger=1 entry=4 lac=3 length=50", "fence ledger=1",
		"explicit-lac ledger=1 lac=4", "lastMark "} {
		if !strings.Contains(jout, want) {
			t.Errorf("journal dump lacks %q:\n%s", want, jout)
		}
	}
	lout, err := runTool(t, "entrylog", "dump", ledgerDir)
	if err != nil {
		t.Fatalf("entrylog dump: %v\n%s", err, lout)
	}
	for _, want := range []string{"version 2, sealed", "entry ledger=1 entry=0 lac=-1 length=10", "ledgers-map ledger=1"} {
		if !strings.Contains(lout, want) {
			t.Errorf("entrylog dump lacks %q:\n%s", want, lout)
		}
	}
	checkDumpTornNewestLog(t, ledgerDir)
}

// checkDumpTornNewestLog: a bookie killed between creating its newest
// entry log and writing its header leaves an empty file; the dump reports
// it as damaged and succeeds, since the bookie's start repairs it.
func checkDumpTornNewestLog(t *testing.T, ledgerDir string) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(ledgerDir, "current", "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("entry logs in %s: %v %v", ledgerDir, logs, err)
	}
	newest := int64(-1)
	for _, l := range logs {
		id, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(l), ".log"), 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		newest = max(newest, id)
	}
	empty := filepath.Join(ledgerDir, "current", strconv.FormatInt(newest+1, 16)+".log")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runTool(t, "entrylog", "dump", "--headers", ledgerDir)
	if err != nil {
		t.Fatalf("entrylog dump with an empty newest log: %v\n%s", err, out)
	}
	if !strings.Contains(out, filepath.Base(empty)+": 0 bytes, damaged at offset 0") ||
		!strings.Contains(out, "ledgers-map ledger=1") {
		t.Errorf("entrylog dump with an empty newest log:\n%s", out)
	}
}

// checkBenchBookie runs `bench bookie` briefly against addr: an fsync line,
// then one JSON line per run.
func checkBenchBookie(t *testing.T, ctx context.Context, addr, dir string) {
	t.Helper()
	var out strings.Builder
	bc := benchBookieConfig{Addr: addr, Protocols: []string{"v3"}, Sizes: []int{100}, Ledgers: []int{1, 2}, Inflight: 4,
		Connections: 1, Duration: 100 * time.Millisecond, FsyncDir: dir, CPUPIDs: []int{os.Getpid()}}
	if err := runBenchBookie(ctx, bc, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("bench output:\n%s", out.String())
	}
	var res benchBookieResult
	if err := json.Unmarshal([]byte(lines[2]), &res); err != nil || res.Adds == 0 || res.Ledgers != 2 || res.P99Us < res.P50Us {
		t.Fatalf("bench line %s: %+v %v", lines[2], res, err)
	}
	// The bookie runs in this process, so --cpu-pid names it.
	if res.ClientCPUUsPerAdd == nil || *res.ClientCPUUsPerAdd < 0 || res.ServerCPUUsPerAdd == nil || *res.ServerCPUUsPerAdd < 0 {
		t.Fatalf("bench line %s: no CPU per add", lines[2])
	}
	bc.CPUPIDs = []int{-1}
	if err := runBenchBookie(ctx, bc, io.Discard); err == nil || !strings.Contains(err.Error(), "--cpu-pid") {
		t.Fatalf("a bad --cpu-pid: %v", err)
	}
}
