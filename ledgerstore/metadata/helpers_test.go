package metadata

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/internal/testhost"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata/metadatatest"
)

// waitTimeout bounds every wait in these tests. It is generous because the
// race detector on two cores slows everything down; a passing test never
// waits this long.
var waitTimeout = testhost.Scale(10 * time.Second)

// dial opens a session and waits until it is established.
func dial(t *testing.T, addr string) *zkclient.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, err := zkclient.OpenSession(ctx, []string{addr}, zkclient.SessionOptions{
		Options: zkclient.Options{SessionTimeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// newStore returns a store over conn, closed when the test ends.
func newTestStore(t *testing.T, conn zkConn, cfg Config) *Store {
	t.Helper()
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = 5 * time.Millisecond
	}
	s, err := newStore(conn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// keeperStore starts a keeper server and returns an initialized store on
// it, and the connection.
func keeperStore(t *testing.T, cfg Config) (*Store, *zkclient.Session) {
	t.Helper()
	conn := dial(t, metadatatest.KeeperAddr(t))
	s := newTestStore(t, conn, cfg)
	if err := s.Init(testContext(t)); err != nil {
		t.Fatal(err)
	}
	return s, conn
}

// dialStore dials a session to addr as production does (Dial, with
// sessionTimeout) and returns an initialized store on it and the session,
// both closed when the test ends.
func dialStore(t *testing.T, addr string, sessionTimeout time.Duration) (*Store, *Session) {
	t.Helper()
	ctx := testContext(t)
	sess, err := Dial(ctx, DialConfig{Servers: []string{addr}, SessionTimeout: sessionTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	s, err := sess.NewStore(Config{RetryBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	return s, sess
}

// testContext returns a context that ends with the test or after
// waitTimeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// unhex decodes hex digits, ignoring spaces, newlines and "#" comments to
// the end of a line.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		line, _, _ = strings.Cut(line, "#")
		b.WriteString(strings.Join(strings.Fields(line), ""))
	}
	out, err := hex.DecodeString(b.String())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sampleMetadata is an open 3/2/2 ledger.
func sampleMetadata() ledger.Metadata {
	return NewOpen([]ledger.BookieID{"192.0.2.1:3181", "192.0.2.2:3181", "192.0.2.3:3181"}, 2, 2,
		bkproto.DigestCRC32C, []byte("secret"))
}

// faultConn wraps a session and fails chosen calls, by method and path.
type faultConn struct {
	zkConn
	mu     sync.Mutex
	fails  map[string]error                     // "method path" -> error
	events map[string]chan zkproto.WatcherEvent // "method path" -> the watch channel to hand out once
	calls  map[string]int                       // "method path" -> calls so far
}

func newFaultConn(c zkConn) *faultConn {
	return &faultConn{zkConn: c, fails: map[string]error{}, events: map[string]chan zkproto.WatcherEvent{},
		calls: map[string]int{}}
}

// fakeWatch makes the next successful watch call of method on path return
// ch instead of the real watch channel, so the test decides what the watch
// reports.
func (f *faultConn) fakeWatch(method, path string, ch chan zkproto.WatcherEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events[method+" "+path] = ch
}

// watchCalls returns how many times method was called on path.
func (f *faultConn) watchCalls(method, path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method+" "+path]
}

// swap counts a watch call and returns the channel to hand out.
func (f *faultConn) swap(method, path string, real <-chan zkproto.WatcherEvent) <-chan zkproto.WatcherEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := method + " " + path
	f.calls[key]++
	if ch, ok := f.events[key]; ok && real != nil {
		delete(f.events, key)
		return ch
	}
	return real
}

func (f *faultConn) GetW(ctx context.Context, path string) ([]byte, zkproto.Stat, <-chan zkproto.WatcherEvent, error) {
	data, stat, ev, err := f.zkConn.GetW(ctx, path)
	return data, stat, f.swap("GetW", path, ev), err
}

func (f *faultConn) failOn(method, path string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails[method+" "+path] = err
}

func (f *faultConn) fault(method, path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fails[method+" "+path]
}

func (f *faultConn) Children(ctx context.Context, path string) ([]string, zkproto.Stat, error) {
	if err := f.fault("Children", path); err != nil {
		return nil, zkproto.Stat{}, err
	}
	return f.zkConn.Children(ctx, path)
}

func (f *faultConn) ChildrenW(ctx context.Context, path string) ([]string, zkproto.Stat, <-chan zkproto.WatcherEvent, error) {
	if err := f.fault("ChildrenW", path); err != nil {
		return nil, zkproto.Stat{}, nil, err
	}
	names, stat, ev, err := f.zkConn.ChildrenW(ctx, path)
	return names, stat, f.swap("ChildrenW", path, ev), err
}

func (f *faultConn) Create(ctx context.Context, path string, data []byte, opts zkclient.CreateOptions) (string, zkproto.Stat, error) {
	if err := f.fault("Create", path); err != nil {
		return "", zkproto.Stat{}, err
	}
	return f.zkConn.Create(ctx, path, data, opts)
}

func (f *faultConn) Get(ctx context.Context, path string) ([]byte, zkproto.Stat, error) {
	if err := f.fault("Get", path); err != nil {
		return nil, zkproto.Stat{}, err
	}
	return f.zkConn.Get(ctx, path)
}

// errInjected is the error faultConn returns.
var errInjected = errors.New("injected fault")

// mkdirs creates each path and its parents, empty, ignoring existing ones.
func mkdirs(t *testing.T, conn *zkclient.Session, paths ...string) {
	t.Helper()
	for _, p := range paths {
		for i := 1; i <= len(p); i++ {
			if i < len(p) && p[i] != '/' {
				continue
			}
			if _, _, err := conn.Create(t.Context(), p[:i], nil, zkclient.CreateOptions{}); err != nil &&
				!errors.Is(err, zkproto.ErrNodeExists) {
				t.Fatalf("create %s: %v", p[:i], err)
			}
		}
	}
}
