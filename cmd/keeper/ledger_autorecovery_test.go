package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"keeper/coordination/zkclient"
	"keeper/ledgerstore/autorecovery"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"

	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// TestRecoverBookieAndDecommission stops a bookie for good, re-replicates it
// with `keeper ledger recover-bookie`, and decommissions a second one:
// afterwards no ledger names either, nothing is left marked, every entry
// reads back, and the decommissioned bookie's cookie is gone.
func TestRecoverBookieAndDecommission(t *testing.T) {
	cl := ledgertest.Start(t, 5)
	var ids []string
	for range 4 {
		id, _ := written(t, mustRunLedger(t, cl, "", "write", "-E", "3", "-Qw", "2", "-Qa", "2", "--count", "50",
			"--size", "100", "--json"))
		ids = append(ids, id)
	}
	if out := mustRunLedger(t, cl, "", "underreplicated"); out != "" {
		t.Fatalf("underreplicated before any loss: %q", out)
	}
	gone := cl.Bookies[0].ID()
	if _, err := runLedger(t, cl, "", "recover-bookie", gone); err == nil || !strings.Contains(err.Error(), "stop it first") {
		t.Fatalf("recover-bookie of a running bookie: %v", err)
	}
	cl.Stop(0)
	out := mustRunLedger(t, cl, "", "recover-bookie", gone, "--timeout", "60s")
	if !strings.Contains(out, "ledgers re-replicated") {
		t.Fatalf("recover-bookie said %q", out)
	}
	retired := cl.Bookies[1].ID()
	cl.Stop(1)
	out = mustRunLedger(t, cl, "", "decommission", retired, "--timeout", "60s")
	if !strings.Contains(out, "decommissioned") {
		t.Fatalf("decommission said %q", out)
	}
	if out := mustRunLedger(t, cl, "", "underreplicated"); out != "" {
		t.Fatalf("underreplicated after recovery: %q", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, closeStore, err := openStore(ctx, []string{cl.ZKAddr()}, "", 10*time.Second, zkclient.Security{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	if _, _, err := st.Cookie(ctx, ledger.BookieID(retired)); !errors.Is(err, metadata.ErrNoCookie) {
		t.Fatalf("cookie of the decommissioned bookie: %v", err)
	}
	if _, _, err := st.Cookie(ctx, ledger.BookieID(gone)); err != nil {
		t.Fatalf("cookie of the recovered bookie: %v", err)
	}
	for _, id := range ids {
		stat := mustRunLedger(t, cl, "", "stat", id)
		if strings.Contains(stat, gone) || strings.Contains(stat, retired) {
			t.Fatalf("ledger %s still names a lost bookie:\n%s", id, stat)
		}
		if got := strings.Count(mustRunLedger(t, cl, "", "read", id), "\n"); got != 50 {
			t.Fatalf("ledger %s: read %d entries, want 50", id, got)
		}
	}
}

// TestAutorecoveryCommand runs `keeper autorecovery` with a bookkeeper.conf
// naming the metadata servers: it joins the auditor election (and, alone,
// wins it) and withdraws its vote when stopped.
func TestAutorecoveryCommand(t *testing.T) {
	cl := ledgertest.Start(t, 1)
	conf := filepath.Join(t.TempDir(), "bk.conf")
	text := "zkServers=" + cl.ZKAddr() + "\nlostBookieRecoveryDelay=7\nautoRecoveryDaemonEnabled=false\n"
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, closeStore, err := openStore(ctx, []string{cl.ZKAddr()}, "", 10*time.Second, zkclient.Security{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		root := newRootCmd()
		root.SetArgs([]string{"autorecovery", conf, "--id", "ar-test", "--log-level", "warn"})
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		done <- root.ExecuteContext(runCtx)
	}()
	election := autorecovery.NewPaths(st.Root()).Election()
	for {
		data, _, err := st.GetNode(ctx, election)
		if id, _ := autorecovery.DecodeVote(data); err == nil && id == "ar-test" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no auditor elected")
		case err := <-done:
			t.Fatalf("keeper autorecovery ended: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if data, _, err := st.GetNode(ctx, autorecovery.NewPaths(st.Root()).Delay()); err != nil || string(data) != "7" {
		t.Fatalf("lostBookieRecoveryDelay znode = %q, %v", data, err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("keeper autorecovery: %v", err)
	}
	if votes, err := st.NodeChildren(ctx, election); err != nil || len(votes) != 0 {
		t.Fatalf("votes after the stop: %v, %v", votes, err)
	}
}

// TestBookieConfAutorecoveryKeys checks that a bookie takes autorecovery's
// keys as its own (no "ignored" warning) and refuses a check keeper does
// not run.
func TestBookieConfAutorecoveryKeys(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.conf")
	text := "journalDirectories=/j\nledgerDirectories=/l\nautoRecoveryDaemonEnabled=true\nlostBookieRecoveryDelay=30\n"
	if err := os.WriteFile(good, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, flags := bookieCommand()
	var logs bytes.Buffer
	if _, err := loadBookieConfig(cmd, []string{good}, flags, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "ignored") {
		t.Fatalf("autorecovery keys reported ignored: %s", logs.String())
	}
	on, cfg, _, err := autorecoveryFromFile([]string{good})
	if err != nil || !on || cfg.LostBookieRecoveryDelay != 30*time.Second {
		t.Fatalf("autorecoveryFromFile = %v, %+v, %v", on, cfg, err)
	}
	bad := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(bad, []byte("auditorReplicasCheckInterval=60\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := autorecoveryFromFile([]string{bad}); err == nil || !strings.Contains(err.Error(), "auditorReplicasCheckInterval") {
		t.Fatalf("a replicas check asked for: %v", err)
	}
}
