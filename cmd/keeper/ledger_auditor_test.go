package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"keeper/coordination/zkclient"
	"keeper/internal/testhost"
	"keeper/ledgerstore/autorecovery"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// TestLedgerAuditorCommands: lostbookierecoverydelay, autorecovery
// --enable/--disable, whoisauditor and triggeraudit against a cluster, and
// underreplicated's filters on what the triggered audit marked.
func TestLedgerAuditorCommands(t *testing.T) {
	cl := ledgertest.Start(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), testhost.Scale(60*time.Second))
	defer cancel()
	fails := func(want string, args ...string) {
		t.Helper()
		if out, err := runLedger(t, cl, "", args...); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("keeper ledger %v: %q, %v; want an error with %q", args, out, err, want)
		}
	}
	says := func(want string, args ...string) {
		t.Helper()
		if out := mustRunLedger(t, cl, "", args...); out != want {
			t.Fatalf("keeper ledger %v: %q, want %q", args, out, want)
		}
	}
	fails("no auditor elected", "whoisauditor")
	fails("one and only one", "lostbookierecoverydelay")
	fails("one and only one", "lostbookierecoverydelay", "--get", "--set", "1")
	fails("negative", "lostbookierecoverydelay", "--set", "-1")
	fails("no lostBookieRecoveryDelay stored", "lostbookierecoverydelay", "--get")
	says("lostBookieRecoveryDelay set to 0\n", "lostbookierecoverydelay", "--set", "0")
	says("0\n", "lostbookierecoverydelay", "--get")
	says("lostBookieRecoveryDelay set to 3600\n", "lostbookierecoverydelay", "--set", "3600")
	says("3600\n", "lostbookierecoverydelay", "--get")
	fails("no auditor elected", "triggeraudit")
	says("enabled\n", "autorecovery")
	says("disabled\n", "autorecovery", "--disable")
	says("disabled\n", "autorecovery", "--disable")
	fails("disabled", "triggeraudit")
	says("enabled\n", "autorecovery", "--enable")
	fails("at most one", "autorecovery", "--enable", "--disable")

	for range 4 {
		mustRunLedger(t, cl, "", "write", "-E", "3", "-Qw", "2", "-Qa", "2", "--count", "5", "--size", "10")
	}
	st, closeStore, err := openStore(ctx, []string{cl.ZKAddr()}, "", testhost.Scale(10*time.Second),
		zkclient.Security{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	d, err := autorecovery.Start(ctx, autorecovery.Config{Store: st, ID: "auditor-cli", NoWorker: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	waitUntil(t, ctx, "the auditor", func() bool {
		out, err := runLedger(t, cl, "", "whoisauditor")
		return err == nil && out == "auditor-cli\n"
	})
	// Four ensembles of three out of four bookies: any one bookie may be in
	// none of them (one run in 256), so stop one that holds some.
	var gone ledger.BookieID
	var on []int64
	stop := -1
	for i, b := range cl.Bookies {
		id := ledger.BookieID(b.ID())
		ids, err := autorecovery.LedgersOn(ctx, st, id)
		if err != nil {
			t.Fatalf("ledgers on %s: %v", id, err)
		}
		if len(ids) > 0 {
			gone, on, stop = id, ids, i
			break
		}
	}
	if stop < 0 {
		t.Fatal("no bookie holds a ledger")
	}
	cl.Stop(stop)
	waitUntil(t, ctx, "the bookie unregistered", func() bool {
		reg, err := st.Bookies(ctx)
		return err == nil && !slices.Contains(reg.Writable, gone)
	})
	says("0\n", "underreplicated", "--count")
	says("audit triggered\n", "triggeraudit")
	waitUntil(t, ctx, "the audit", func() bool {
		out, err := runLedger(t, cl, "", "underreplicated", "--count")
		return err == nil && out == strconv.Itoa(len(on))+"\n"
	})
	var lines []string
	for _, id := range on {
		lines = append(lines, strconv.FormatInt(id, 10)+"\t"+string(gone)+"\t-\n")
	}
	says(strings.Join(lines, ""), "underreplicated", "--missingreplica", string(gone))
	says(strings.Join(lines, ""), "underreplicated", "--excludingmissingreplica", "nobody:1")
	says("", "underreplicated", "--excludingmissingreplica", string(gone))
	says("0\n", "underreplicated", "--missingreplica", "nobody:1", "-c")
	says("3600\n", "lostbookierecoverydelay", "--get")

	// clusterinfo: four bookies with cookies, one gone, ledgers marked.
	says(`{
  "auditorElected": true,
  "auditorId": "auditor-cli",
  "clusterUnderReplicated": true,
  "ledgerReplicationEnabled": true,
  "totalBookiesCount": 4,
  "writableBookiesCount": 3,
  "readonlyBookiesCount": 0,
  "unavailableBookiesCount": 1
}
`, "clusterinfo")
	// queryautorecoverystatus lists only the ledgers a worker holds.
	says("CurrentRecoverLedgerInfo:\nNo Ledger is being recovered\n", "queryautorecoverystatus")
	worker, err := autorecovery.NewManager(ctx, st, "worker-cli")
	if err != nil {
		t.Fatal(err)
	}
	lock, ok, err := worker.Acquire(ctx)
	if err != nil || !ok {
		t.Fatalf("Acquire: %v %v", ok, err)
	}
	says(fmt.Sprintf("CurrentRecoverLedgerInfo:\n\tLedgerId: %d\tBookieId: worker-cli\n", lock.LedgerID),
		"queryautorecoverystatus")
	md, _, err := st.Read(ctx, lock.LedgerID)
	if err != nil {
		t.Fatal(err)
	}
	says(fmt.Sprintf("CurrentRecoverLedgerInfo:\n\tLedgerId: %d\tBookieId: worker-cli\tLedgerSize: %d\n",
		lock.LedgerID, md.Length), "queryautorecoverystatus", "-v")
}

// waitUntil polls cond until it holds or ctx ends.
func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
