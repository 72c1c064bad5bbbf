package bookie

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"

	"keeper/coordination/server"
	"keeper/coordination/zkclient"
	"keeper/internal/testhost"
	"keeper/internal/vfs"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookie/entrystore"
	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/metadata/metadatatest"
)

// testPassword is every test ledger's password.
var testPassword = []byte("secret")

// testKey is the master key of testPassword.
var testKey = func() []byte { k := bkproto.MasterKey(testPassword); return k[:] }()

// env is one test bookie's world: memory filesystems that survive a
// restart (and can be crash-cloned), an optional in-process metadata
// server, and an adjustable disk usage.
type env struct {
	t     *testing.T
	fs    *vfs.MemFS
	pfs   *pvfs.MemFS
	zk    *server.Server // nil: no metadata
	usage atomic.Uint64  // used fraction of every ledger disk, in millionths
	id    string
	tweak func(*Config)
}

// newEnv returns an env; withZK starts a metadata server too.
func newEnv(t *testing.T, withZK bool) *env {
	e := &env{t: t, fs: vfs.NewMem(), pfs: pvfs.NewCrashableMem(), id: "bookie-1.test:3181"}
	e.usage.Store(100_000) // 10%
	if withZK {
		// A short tick, so that sessions of crashed clients expire quickly.
		e.zk = metadatatest.Keeper(t, metadatatest.FastTicks())
	}
	return e
}

// config returns the bookie configuration of the env: every periodic
// task slowed down to an hour, so that tests run them explicitly.
func (e *env) config() Config {
	cfg := Config{
		ListenAddr:              "127.0.0.1:0",
		BookieID:                e.id,
		FS:                      e.fs,
		StoreConfig:             func(sc *entrystore.Config) { sc.IndexFS = e.pfs },
		JournalDirs:             []string{"/journal"},
		LedgerDirs:              []string{"/ledgers0", "/ledgers1"},
		FlushInterval:           time.Hour,
		DiskCheckInterval:       time.Hour,
		GCWaitTime:              time.Hour,
		MinorCompactionInterval: time.Hour,
		MajorCompactionInterval: 2 * time.Hour,
		// A healthy session must outlive a loaded machine's stalls: the
		// client gives up a connection after two thirds of the timeout
		// without a reply, and go-zookeeper's reconnect with watches set
		// races with its own receive loop (lastZxid), which the race
		// detector reports. Nothing here waits for this session to expire.
		ZKSessionTimeout: testhost.Scale(10 * time.Second),
		DiskUsage: func(dir string) (entrystore.DirUsage, error) {
			const total = 1 << 30
			return entrystore.DirUsage{Dir: dir, UsedBytes: total * e.usage.Load() / 1_000_000, TotalBytes: total}, nil
		},
	}
	if e.zk != nil {
		cfg.MetadataServers = []string{e.zk.Addr().String()}
	}
	if e.tweak != nil {
		e.tweak(&cfg)
	}
	return cfg
}

// setUsage sets every ledger disk's used fraction.
func (e *env) setUsage(f float64) { e.usage.Store(uint64(f * 1_000_000)) }

// tryStart starts a bookie on the env.
func (e *env) tryStart() (*Bookie, error) {
	b, err := New(e.config())
	if err != nil {
		return nil, err
	}
	if err := b.Start(context.Background()); err != nil {
		return nil, err
	}
	return b, nil
}

// start starts a bookie and closes it at the end of the test.
func (e *env) start() *Bookie {
	e.t.Helper()
	b, err := e.tryStart()
	if err != nil {
		e.t.Fatalf("start: %v", err)
	}
	e.t.Cleanup(func() { _ = b.Close() })
	return b
}

// crash returns an env holding what a power loss now would leave on its
// disks (only synced data), sharing the metadata server.
func (e *env) crash() *env {
	c := &env{t: e.t, fs: e.fs.CrashClone(nil), pfs: e.pfs.CrashClone(pvfs.CrashCloneCfg{}), zk: e.zk, id: e.id,
		tweak: e.tweak}
	c.usage.Store(e.usage.Load())
	return c
}

// dial connects a client to b.
func dial(t *testing.T, b *Bookie) *bookierpc.Client {
	t.Helper()
	c, err := bookierpc.Dial(context.Background(), b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ctx is a test's per-call deadline.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), testhost.Scale(30*time.Second))
	t.Cleanup(cancel)
	return c
}

// payload is entry entryID of ledgerID's payload: deterministic, so that
// a read can be checked byte for byte.
func payload(ledgerID, entryID int64, size int) []byte {
	p := make([]byte, size)
	s := fmt.Sprintf("ledger %d entry %d|", ledgerID, entryID)
	for i := range p {
		p[i] = s[i%len(s)]
	}
	return p
}

// body is an entry's stored form with LAC entryID-1 and CRC32C digest.
func body(ledgerID, entryID int64, size int) []byte {
	return bkproto.EncodeEntry(ledgerID, entryID, entryID-1, (entryID+1)*int64(size), bkproto.DigestCRC32C, nil,
		payload(ledgerID, entryID, size))
}

// addEntries adds entries [from, to) of a ledger and fails on any error.
func addEntries(t *testing.T, c *bookierpc.Client, ledgerID, from, to int64) {
	t.Helper()
	var calls []<-chan bookierpc.Result
	for e := from; e < to; e++ {
		calls = append(calls, c.Go(bookierpc.AddRequest(ledgerID, e, testKey, body(ledgerID, e, 100), false)))
	}
	for i, ch := range calls {
		res := <-ch
		if err := bookierpc.StatusErr(res.Resp, res.Err); err != nil {
			t.Fatalf("add %d/%d: %v", ledgerID, from+int64(i), err)
		}
	}
}

// checkEntry reads an entry and checks its digest and payload.
func checkEntry(t *testing.T, c *bookierpc.Client, ledgerID, entryID int64) {
	t.Helper()
	rr, err := c.Read(ctx(t), ledgerID, entryID)
	if err != nil {
		t.Fatalf("read %d/%d: %v", ledgerID, entryID, err)
	}
	ent, err := bkproto.DecodeEntry(rr.GetBody(), bkproto.DigestCRC32C, nil, ledgerID, entryID)
	if err != nil {
		t.Fatalf("read %d/%d: %v", ledgerID, entryID, err)
	}
	if !bytes.Equal(ent.Payload, payload(ledgerID, entryID, 100)) {
		t.Fatalf("read %d/%d: payload differs", ledgerID, entryID)
	}
}

// wantStatus fails unless err carries status want.
func wantStatus(t *testing.T, what string, err error, want bkproto.StatusCode) {
	t.Helper()
	var got bkproto.StatusCode
	var be *bkproto.Error
	switch {
	case err == nil:
		got = bkproto.StatusCode_EOK
	case errors.As(err, &be):
		got = be.Status
	default:
		t.Fatalf("%s: %v, want status %v", what, err, want)
	}
	if got != want {
		t.Fatalf("%s: status %v, want %v", what, got, want)
	}
}

// eventually spins (yielding, never sleeping) until cond holds, for at
// most 30 s: for state another goroutine of this process changes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// zkConn opens a metadata session for the test itself.
func (e *env) zkConn() *zkclient.Session {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testhost.Scale(10*time.Second))
	defer cancel()
	c, err := zkclient.OpenSession(ctx, []string{e.zk.Addr().String()}, zkclient.SessionOptions{
		Options: zkclient.Options{SessionTimeout: 10 * time.Second}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}
