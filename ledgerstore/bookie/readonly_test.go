package bookie

import (
	"errors"
	"testing"
	"time"

	"keeper/coordination/zkclient"
	"keeper/ledgerstore/bkproto"
)

// registeredAs returns where the bookie's registration znode is:
// "writable", "readonly", "both" or "none".
func registeredAs(t *testing.T, conn *zkclient.Session, id string) string {
	t.Helper()
	_, w, err := conn.Exists(t.Context(), "/ledgers/available/"+id)
	if err != nil {
		t.Fatal(err)
	}
	_, r, err := conn.Exists(t.Context(), "/ledgers/available/readonly/"+id)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case w && r:
		return "both"
	case w:
		return "writable"
	case r:
		return "readonly"
	}
	return "none"
}

func TestReadOnlyWhenDisksFill(t *testing.T) {
	e := newEnv(t, true)
	e.tweak = func(c *Config) { c.DiskUsageLwmThreshold = 0.85 }
	b := e.start()
	zc := e.zkConn()
	c := dial(t, b)
	addEntries(t, c, 1, 0, 3)
	if got := registeredAs(t, zc, b.ID()); got != "writable" {
		t.Fatalf("registered as %s, want writable", got)
	}

	e.setUsage(0.97)
	if err := b.CheckDisks(); err != nil {
		t.Fatal(err)
	}
	if !b.ReadOnly() {
		t.Fatal("not read-only with every disk at 97%")
	}
	if got := registeredAs(t, zc, b.ID()); got != "readonly" {
		t.Fatalf("registered as %s, want readonly", got)
	}
	err := c.Add(ctx(t), 1, 3, testKey, body(1, 3, 100), false)
	wantStatus(t, "add while read-only", err, bkproto.StatusCode_EREADONLY)
	err = c.WriteLAC(ctx(t), 1, 2, testKey, bkproto.EncodeLAC(1, 2, bkproto.DigestCRC32C, nil))
	wantStatus(t, "write LAC while read-only", err, bkproto.StatusCode_EREADONLY)
	checkEntry(t, c, 1, 2) // reads are served
	// Fencing and recovery adds still work, so that recovery can finish.
	if _, err := c.FenceRead(ctx(t), 1, bkproto.LastAddConfirmed, testKey); err != nil {
		t.Fatalf("fence while read-only: %v", err)
	}
	if err := c.Add(ctx(t), 1, 3, testKey, body(1, 3, 100), true); err != nil {
		t.Fatalf("recovery add while read-only: %v", err)
	}

	// Between the low-water mark and the threshold it stays read-only.
	e.setUsage(0.9)
	if err := b.CheckDisks(); err != nil || !b.ReadOnly() {
		t.Fatalf("at 90%%, above the low-water mark 85%%: read-only %v, %v", b.ReadOnly(), err)
	}
	e.setUsage(0.5)
	if err := b.CheckDisks(); err != nil || b.ReadOnly() {
		t.Fatalf("at 50%%: read-only %v, %v", b.ReadOnly(), err)
	}
	if got := registeredAs(t, zc, b.ID()); got != "writable" {
		t.Fatalf("registered as %s after space returned, want writable", got)
	}
	addEntries(t, c, 2, 0, 3)
}

func TestStartsReadOnlyOnFullDisks(t *testing.T) {
	e := newEnv(t, true)
	e.setUsage(0.99)
	b := e.start()
	if !b.ReadOnly() {
		t.Fatal("started writable on full disks")
	}
	if got := registeredAs(t, e.zkConn(), b.ID()); got != "readonly" {
		t.Fatalf("registered as %s, want readonly", got)
	}
}

// TestFullDisksStopWithoutReadOnlyMode: readOnlyModeEnabled=false makes
// full disks fatal, at start and later.
func TestFullDisksStopWithoutReadOnlyMode(t *testing.T) {
	e := newEnv(t, false)
	e.tweak = func(c *Config) {
		c.ReadOnlyModeDisabled = true
		c.DiskCheckInterval = time.Millisecond
	}
	e.setUsage(0.99)
	if _, err := e.tryStart(); !errors.Is(err, errDisksFull) {
		t.Fatalf("start on full disks: %v", err)
	}
	e.setUsage(0.5)
	b := e.start()
	e.setUsage(0.99)
	<-b.Done()
	if !errors.Is(b.Err(), errDisksFull) {
		t.Fatalf("stopped with %v", b.Err())
	}
}
