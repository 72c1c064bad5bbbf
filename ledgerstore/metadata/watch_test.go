package metadata

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata/metadatatest"
)

// next receives from ch, failing the test after waitTimeout. ok is false
// if ch is closed.
func next[T any](t *testing.T, ch <-chan T) (v T, ok bool) {
	t.Helper()
	select {
	case v, ok = <-ch:
		return v, ok
	case <-time.After(waitTimeout):
		t.Fatalf("nothing on the watch channel after %v", waitTimeout)
		return v, false
	}
}

// drained fails unless ch is closed, after at most one more value.
func drained[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	for range 2 {
		if _, ok := next(t, ch); !ok {
			return
		}
	}
	t.Fatalf("the watch channel stayed open")
}

func TestWatchLedger(t *testing.T) {
	s, _ := keeperStore(t, Config{})
	ctx := testContext(t)
	stored, _, err := s.Create(ctx, 7, sampleMetadata())
	if err != nil {
		t.Fatal(err)
	}
	ch := s.Watch(ctx, 7)
	u, _ := next(t, ch)
	if u.Err != nil || u.Deleted || u.Version != 0 || u.Metadata.CToken != stored.CToken {
		t.Fatalf("first update %+v: want the metadata at version 0", u)
	}
	// A reader sees an ensemble change, then the close.
	md := u.Metadata.Clone()
	md.Segments = append(md.Segments, ledger.Segment{FirstEntryID: 5, Bookies: []ledger.BookieID{"192.0.2.1:3181", "192.0.2.7:3181", "192.0.2.3:3181"}})
	if _, err := s.Write(ctx, 7, md, 0); err != nil {
		t.Fatal(err)
	}
	if u, _ = next(t, ch); u.Version != 1 || len(u.Metadata.Segments) != 2 {
		t.Fatalf("after an ensemble change: %+v", u)
	}
	md.State, md.LastEntryID, md.Length = ledger.StateClosed, 8, 90
	if _, err := s.Write(ctx, 7, md, 1); err != nil {
		t.Fatal(err)
	}
	if u, _ = next(t, ch); u.Version != 2 || u.Metadata.State != ledger.StateClosed || u.Metadata.LastEntryID != 8 {
		t.Fatalf("after the close: %+v", u)
	}
	if err := s.Delete(ctx, 7, 2); err != nil {
		t.Fatal(err)
	}
	if u, _ = next(t, ch); !u.Deleted {
		t.Fatalf("after Delete: %+v, want Deleted", u)
	}
	drained(t, ch)

	// A watch on a ledger that does not exist reports it at once.
	ch = s.Watch(ctx, 8)
	if u, _ = next(t, ch); !u.Deleted {
		t.Fatalf("watch of a missing ledger: %+v", u)
	}
	drained(t, ch)
}

// TestWatchLedgerCoalesces checks that a reader that does not keep up gets
// the latest metadata, not a stale one.
func TestWatchLedgerCoalesces(t *testing.T) {
	s, _ := keeperStore(t, Config{})
	ctx := testContext(t)
	if _, _, err := s.Create(ctx, 1, sampleMetadata()); err != nil {
		t.Fatal(err)
	}
	ch := s.Watch(ctx, 1)
	u, _ := next(t, ch)
	v := u.Version
	for range 10 {
		var err error
		if v, err = s.Write(ctx, 1, u.Metadata, v); err != nil {
			t.Fatal(err)
		}
	}
	last := Version(-1)
	for last != v {
		u, _ = next(t, ch)
		if u.Version <= last {
			t.Fatalf("version %d after %d: updates must move forward", u.Version, last)
		}
		last = u.Version
	}
}

func TestWatchLedgerMalformed(t *testing.T) {
	s, conn := keeperStore(t, Config{})
	ctx := testContext(t)
	if _, _, err := s.Create(ctx, 2, sampleMetadata()); err != nil {
		t.Fatal(err)
	}
	ch := s.Watch(ctx, 2)
	next(t, ch)
	if _, err := conn.Set(t.Context(), s.LedgerPath(2), []byte("junk"), 0); err != nil {
		t.Fatal(err)
	}
	if u, _ := next(t, ch); !errors.Is(u.Err, ErrMalformed) {
		t.Fatalf("update after junk was written: %+v, want ErrMalformed", u)
	}
	good, _ := Encode(sampleMetadata())
	if _, err := conn.Set(t.Context(), s.LedgerPath(2), good, 1); err != nil {
		t.Fatal(err)
	}
	if u, _ := next(t, ch); u.Err != nil || u.Version != 2 {
		t.Fatalf("the watch did not recover from junk: %+v", u)
	}
}

func TestWatchEnds(t *testing.T) {
	addr := metadatatest.KeeperAddr(t)
	conn := dial(t, addr)
	s := newTestStore(t, conn, Config{})
	ctx := testContext(t)
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(ctx, 1, sampleMetadata()); err != nil {
		t.Fatal(err)
	}

	wctx, cancel := context.WithCancel(ctx)
	byCtx, bookiesByCtx := s.Watch(wctx, 1), s.WatchBookies(wctx)
	next(t, byCtx)
	next(t, bookiesByCtx)
	cancel()
	drained(t, byCtx)
	drained(t, bookiesByCtx)

	byClose, bookiesByClose := s.Watch(ctx, 1), s.WatchBookies(ctx)
	next(t, byClose)
	next(t, bookiesByClose)
	s.Close()
	drained(t, byClose)
	drained(t, bookiesByClose)
	if _, ok := <-s.Watch(ctx, 1); ok {
		t.Fatalf("Watch on a closed store delivered")
	}

	// Closing the connection ends the watches too.
	s2 := newTestStore(t, conn, Config{})
	byConn, bookiesByConn := s2.Watch(ctx, 1), s2.WatchBookies(ctx)
	next(t, byConn)
	next(t, bookiesByConn)
	conn.Close()
	drained(t, byConn)
	drained(t, bookiesByConn)
}

// bookie registers id on its own session, writable or read-only, as a
// bookie does, and returns the session.
func registerBookie(t *testing.T, addr, id string, readOnly bool) *zkclient.Session {
	t.Helper()
	c := dial(t, addr)
	p := "/ledgers/available/" + id
	if readOnly {
		p = "/ledgers/available/readonly/" + id
	}
	if _, _, err := c.Create(t.Context(), p, nil, zkclient.CreateOptions{Flags: zkproto.FlagEphemeral}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestWatchBookiesSteps makes one registry change at a time and checks
// that each is delivered, in order, with nothing in between.
func TestWatchBookiesSteps(t *testing.T) {
	addr := metadatatest.KeeperAddr(t)
	conn := dial(t, addr)
	s := newTestStore(t, conn, Config{})
	ctx := testContext(t)
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	ch := s.WatchBookies(ctx)
	expect := func(step string, w, r []ledger.BookieID) {
		t.Helper()
		got, _ := next(t, ch)
		if want := (Registry{Writable: w, ReadOnly: r}); !got.Equal(want) {
			t.Fatalf("%s: registry %+v, want %+v", step, got, want)
		}
		if now, err := s.Bookies(ctx); err != nil || !now.Equal(got) {
			t.Fatalf("%s: Bookies = %+v, %v; the watch said %+v", step, now, err, got)
		}
	}
	var none []ledger.BookieID
	expect("start", none, none)
	b1 := registerBookie(t, addr, "b1:3181", false)
	expect("b1 joins", []ledger.BookieID{"b1:3181"}, none)
	b2 := registerBookie(t, addr, "b2:3181", false)
	expect("b2 joins", []ledger.BookieID{"b1:3181", "b2:3181"}, none)
	b3 := registerBookie(t, addr, "b3:3181", true)
	expect("b3 joins read-only", []ledger.BookieID{"b1:3181", "b2:3181"}, []ledger.BookieID{"b3:3181"})
	// b2 turns read-only: a new znode first, then the old one goes.
	if _, _, err := b2.Create(t.Context(), "/ledgers/available/readonly/b2:3181", nil, zkclient.CreateOptions{Flags: zkproto.FlagEphemeral}); err != nil {
		t.Fatal(err)
	}
	expect("b2 registers read-only", []ledger.BookieID{"b1:3181", "b2:3181"}, []ledger.BookieID{"b2:3181", "b3:3181"})
	if err := b2.Delete(t.Context(), "/ledgers/available/b2:3181", -1); err != nil {
		t.Fatal(err)
	}
	expect("b2 leaves writable", []ledger.BookieID{"b1:3181"}, []ledger.BookieID{"b2:3181", "b3:3181"})
	b1.Close() // a crash: the session ends and its znode with it
	expect("b1 dies", none, []ledger.BookieID{"b2:3181", "b3:3181"})
	b3.Close()
	expect("b3 dies", none, []ledger.BookieID{"b2:3181"})
	if _, _, err := conn.Create(t.Context(), "/ledgers/available/not a bookie", nil, zkclient.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	registerBookie(t, addr, "b4:3181", false)
	expect("b4 joins next to a stray znode", []ledger.BookieID{"b4:3181"}, []ledger.BookieID{"b2:3181"})
}

// TestWatchBookiesBurst makes changes faster than the watcher reads. Every
// registry delivered must be one the directory really went through, in
// order, ending with the final one. (The states are all distinct, so each
// delivery names its place in the history.)
func TestWatchBookiesBurst(t *testing.T) {
	s, conn := keeperStore(t, Config{})
	ctx := testContext(t)
	ch := s.WatchBookies(ctx)
	states := []Registry{{}}
	if got, _ := next(t, ch); !got.Equal(states[0]) {
		t.Fatalf("first registry %+v", got)
	}
	const n = 20
	var live []ledger.BookieID
	change := func(id ledger.BookieID, add bool) {
		p := "/ledgers/available/" + string(id)
		if add {
			if _, _, err := conn.Create(t.Context(), p, nil, zkclient.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			live = append(live, id)
		} else {
			if err := conn.Delete(t.Context(), p, -1); err != nil {
				t.Fatal(err)
			}
			live = live[1:]
		}
		states = append(states, Registry{Writable: slices.Clone(live)})
	}
	for i := range n {
		change(ledger.BookieID(fmt.Sprintf("b%02d:3181", i)), true)
	}
	for i := range n - 1 {
		change(ledger.BookieID(fmt.Sprintf("b%02d:3181", i)), false)
	}
	at := 0
	for at < len(states)-1 {
		got, ok := next(t, ch)
		i := slices.IndexFunc(states[at+1:], got.Equal)
		if !ok || i < 0 {
			t.Fatalf("registry %+v (open %v) is not a later state than #%d %+v", got, ok, at, states[at])
		}
		at += 1 + i
	}
}

func TestWatchBookiesMissingDirectory(t *testing.T) {
	conn := dial(t, metadatatest.KeeperAddr(t))
	s := newTestStore(t, conn, Config{})
	ctx := testContext(t)
	ch := s.WatchBookies(ctx) // before Init: no /ledgers at all
	if got, _ := next(t, ch); !got.Equal(Registry{}) {
		t.Fatalf("registry of a missing tree: %+v", got)
	}
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := conn.Create(t.Context(), "/ledgers/available/b1:3181", nil, zkclient.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := next(t, ch); !got.Equal(Registry{Writable: []ledger.BookieID{"b1:3181"}}) {
		t.Fatalf("registry after the tree appeared: %+v", got)
	}
}

func TestWatchBookiesRetries(t *testing.T) {
	conn := dial(t, metadatatest.KeeperAddr(t))
	fc := newFaultConn(conn)
	s := newTestStore(t, fc, Config{})
	ctx := testContext(t)
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	fc.failOn("ChildrenW", "/ledgers/available/readonly", zkclient.ErrConnectionLoss)
	ch := s.WatchBookies(ctx)
	if _, _, err := conn.Create(t.Context(), "/ledgers/available/b1:3181", nil, zkclient.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fc.failOn("ChildrenW", "/ledgers/available/readonly", nil)
	if got, _ := next(t, ch); !got.Equal(Registry{Writable: []ledger.BookieID{"b1:3181"}}) {
		t.Fatalf("registry after a failing listing recovered: %+v", got)
	}
}

func TestBookieAddress(t *testing.T) {
	s, conn := keeperStore(t, Config{})
	ctx := testContext(t)
	info, err := proto.Marshal(&bkproto.BookieServiceInfoFormat{Endpoints: []*bkproto.BookieServiceInfoFormat_Endpoint{
		{Id: proto.String("httpserver"), Port: proto.Int32(8000), Host: proto.String("10.0.0.5"), Protocol: proto.String("http")},
		{Id: proto.String("bookie"), Port: proto.Int32(3181), Host: proto.String("10.0.0.5"), Protocol: proto.String("bookie-rpc")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for p, data := range map[string][]byte{
		"/ledgers/available/opaque-id":                 info,
		"/ledgers/available/readonly/192.0.2.9:3181":   nil,
		"/ledgers/available/readonly/no-endpoint":      {},
		"/ledgers/available/readonly/garbage-endpoint": {0xff},
	} {
		if _, _, err := conn.Create(t.Context(), p, data, zkclient.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		id   ledger.BookieID
		want string
		err  error
	}{
		{"opaque-id", "10.0.0.5:3181", nil},
		{"192.0.2.9:3181", "192.0.2.9:3181", nil},
		{"no-endpoint", "", ErrMalformed},
		{"garbage-endpoint", "", ErrMalformed},
		{"absent:3181", "", ErrBookieNotAvailable},
	} {
		got, err := s.BookieAddress(ctx, tc.id)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("BookieAddress(%s) = %q, %v; want %q, %v", tc.id, got, err, tc.want, tc.err)
		}
	}
}

// TestWatchesSurviveSessionExpiry feeds the watches the event a
// zkclient.Session sends when a session expires (its watches are gone): each must re-arm
// and keep reporting changes, not end.
func TestWatchesSurviveSessionExpiry(t *testing.T) {
	conn := dial(t, metadatatest.KeeperAddr(t))
	fc := newFaultConn(conn)
	s := newTestStore(t, fc, Config{})
	ctx := testContext(t)
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(ctx, 1, sampleMetadata()); err != nil {
		t.Fatal(err)
	}
	expired := zkproto.WatcherEvent{Type: zkproto.EventNone, State: zkclient.StateExpired}

	ledgerEv := make(chan zkproto.WatcherEvent, 1)
	fc.fakeWatch("GetW", s.LedgerPath(1), ledgerEv)
	ledgerW := s.Watch(ctx, 1)
	next(t, ledgerW)
	ledgerEv <- expired
	if _, err := s.Write(ctx, 1, sampleMetadata(), 0); err != nil {
		t.Fatal(err)
	}
	if u, ok := next(t, ledgerW); !ok || u.Version != 1 {
		t.Fatalf("after an expiry and a write: %+v (open %v)", u, ok)
	}
	if n := fc.watchCalls("GetW", s.LedgerPath(1)); n < 2 {
		t.Fatalf("the ledger watch was armed %d times; want a re-arm after the expiry", n)
	}

	availEv := make(chan zkproto.WatcherEvent, 1)
	fc.fakeWatch("ChildrenW", "/ledgers/available", availEv)
	bookies := s.WatchBookies(ctx)
	next(t, bookies)
	availEv <- expired
	if _, _, err := conn.Create(t.Context(), "/ledgers/available/b1:3181", nil, zkclient.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, ok := next(t, bookies); !ok || !got.Equal(Registry{Writable: []ledger.BookieID{"b1:3181"}}) {
		t.Fatalf("after an expiry and a registration: %+v (open %v)", got, ok)
	}
}
