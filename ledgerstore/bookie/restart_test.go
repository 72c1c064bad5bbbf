package bookie

import (
	"fmt"
	"testing"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookie/journal"
	"keeper/ledgerstore/bookierpc"
)

// writeState adds entries to ledgers 1 to 3, fences ledger 2 and writes an
// explicit LAC to ledger 3: the state a restart must restore.
func writeState(t *testing.T, c *bookierpc.Client, from, to int64) {
	t.Helper()
	for l := int64(1); l <= 3; l++ {
		addEntries(t, c, l, from, to)
	}
	if _, err := c.FenceRead(ctx(t), 2, bkproto.LastAddConfirmed, testKey); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteLAC(ctx(t), 3, to-1, testKey, bkproto.EncodeLAC(3, to-1, bkproto.DigestCRC32C, nil)); err != nil {
		t.Fatal(err)
	}
	// Fencing a ledger with no entries here answers NoSuchEntry, and only
	// once the fence is durable (the gap docs/bookkeeper-protocol.md §4.1 notes in Java).
	_, err := c.FenceRead(ctx(t), 4, bkproto.LastAddConfirmed, testKey)
	wantStatus(t, "fence of an empty ledger", err, bkproto.StatusCode_ENOENTRY)
}

// checkState checks what writeState wrote, and that the master keys are
// still bound.
func checkState(t *testing.T, c *bookierpc.Client, to int64) {
	t.Helper()
	for l := int64(1); l <= 3; l++ {
		for e := int64(0); e < to; e++ {
			checkEntry(t, c, l, e)
		}
	}
	err := c.Add(ctx(t), 2, to, testKey, body(2, to, 100), false)
	wantStatus(t, "add to the fenced ledger after restart", err, bkproto.StatusCode_EFENCED)
	if err := c.Add(ctx(t), 2, to, testKey, body(2, to, 100), true); err != nil {
		t.Fatalf("recovery add after restart: %v", err)
	}
	resp, err := c.ReadLAC(ctx(t), 3)
	if err != nil {
		t.Fatal(err)
	}
	if lac, err := bkproto.DecodeLAC(resp.GetLacBody(), bkproto.DigestCRC32C, nil, 3); err != nil || lac != to-1 {
		t.Fatalf("explicit LAC after restart: %d, %v", lac, err)
	}
	wrong := bkproto.MasterKey([]byte("wrong"))
	err = c.Add(ctx(t), 1, to, wrong[:], body(1, to, 100), false)
	wantStatus(t, "add with a wrong key after restart", err, bkproto.StatusCode_EUA)
	err = c.Add(ctx(t), 4, 0, testKey, body(4, 0, 100), false)
	wantStatus(t, "add to the ledger fenced while empty, after restart", err, bkproto.StatusCode_EFENCED)
}

func TestRestartAfterClose(t *testing.T) {
	e := newEnv(t, false)
	b := e.start()
	writeState(t, dial(t, b), 0, 10)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	checkState(t, dial(t, e.start()), 10)
}

// TestRestartAfterCrash restarts from what a power loss leaves: only
// synced bytes. The entries acknowledged before the checkpoint come from
// the entry logs, the rest (and the fence, the explicit LAC and the
// master keys of ledgers first seen after it) from journal replay.
func TestRestartAfterCrash(t *testing.T) {
	for _, journals := range []int{1, 2} {
		t.Run(fmt.Sprintf("journals=%d", journals), func(t *testing.T) {
			e := newEnv(t, false)
			if journals == 2 {
				e.tweak = func(c *Config) { c.JournalDirs = []string{"/journal", "/journal2"} }
			}
			restartAfterCrash(t, e)
		})
	}
}

func restartAfterCrash(t *testing.T, e *env) {
	b := e.start()
	c := dial(t, b)
	for l := int64(1); l <= 3; l++ {
		addEntries(t, c, l, 0, 5)
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	writeState(t, c, 5, 12)
	addEntries(t, c, 1, 0, 5) // rewritten, as recovery may, after the checkpoint

	crashed := e.crash()
	_ = b.Close()
	b2 := crashed.start()
	c2 := dial(t, b2)
	checkState(t, c2, 12)

	// Fencing and the explicit LAC survive a second crash too, now that
	// the first restart checkpointed them into ledger storage.
	again := crashed.crash()
	_ = b2.Close()
	checkState(t, dial(t, again.start()), 12)
}

// TestJournalRollAndRemoval rolls journal files and checks that a
// checkpoint removes the ones before its mark, and that a crash after it
// still restores everything.
func TestJournalRollAndRemoval(t *testing.T) {
	e := newEnv(t, false)
	e.tweak = func(c *Config) {
		c.JournalMaxSizeBytes = 16 << 10
		c.JournalPreAllocSizeBytes = 16 << 10
		c.JournalMaxBackups = -1
	}
	b := e.start()
	c := dial(t, b)
	for i := int64(0); i < 40; i++ {
		addEntries(t, c, 1, i*20, (i+1)*20)
	}
	before, err := journal.Files(e.fs, "/journal")
	if err != nil || len(before) < 5 {
		t.Fatalf("journal files before the checkpoint: %d, %v", len(before), err)
	}
	if err := b.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	after, err := journal.Files(e.fs, "/journal")
	if err != nil || len(after) > 1 {
		t.Fatalf("journal files after the checkpoint: %v, %v", after, err)
	}
	addEntries(t, c, 1, 800, 810)
	crashed := e.crash()
	_ = b.Close()
	c2 := dial(t, crashed.start())
	for i := int64(0); i < 810; i++ {
		checkEntry(t, c2, 1, i)
	}
}
