package metadata

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/internal/cutproxy"
	"keeper/internal/testhost"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata/metadatatest"
)

func TestRegistrationData(t *testing.T) {
	endpoint := func(id, protocol, host string, port int32) *bkproto.BookieServiceInfoFormat_Endpoint {
		return &bkproto.BookieServiceInfoFormat_Endpoint{Id: proto.String(id), Protocol: proto.String(protocol),
			Host: proto.String(host), Port: proto.Int32(port)}
	}
	for _, tc := range []struct {
		rpc, http string
		want      []*bkproto.BookieServiceInfoFormat_Endpoint // nil: an error
	}{
		{rpc: "10.0.0.7:3181", want: []*bkproto.BookieServiceInfoFormat_Endpoint{
			endpoint("bookie", "bookie-rpc", "10.0.0.7", 3181)}},
		{rpc: "bk1.example:3181", http: "bk1.example:8000", want: []*bkproto.BookieServiceInfoFormat_Endpoint{
			endpoint("bookie", "bookie-rpc", "bk1.example", 3181), endpoint("httpserver", "http", "bk1.example", 8000)}},
		{rpc: "[::1]:3181", want: []*bkproto.BookieServiceInfoFormat_Endpoint{
			endpoint("bookie", "bookie-rpc", "::1", 3181)}},
		{rpc: "10.0.0.7"},
		{rpc: "10.0.0.7:0"},
		{rpc: "10.0.0.7:65536"},
		{rpc: ":3181"},
		{rpc: "10.0.0.7:3181", http: "nohttp"},
	} {
		data, err := RegistrationData(tc.rpc, tc.http)
		if tc.want == nil {
			if err == nil {
				t.Errorf("RegistrationData(%q, %q) = %x, want an error", tc.rpc, tc.http, data)
			}
			continue
		}
		if err != nil {
			t.Errorf("RegistrationData(%q, %q): %v", tc.rpc, tc.http, err)
			continue
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&bkproto.BookieServiceInfoFormat{Endpoints: tc.want})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, want) {
			t.Errorf("RegistrationData(%q, %q) =\n%x\nwant\n%x", tc.rpc, tc.http, data, want)
		}
		// ServiceAddress reads back what RegistrationData writes.
		if addr, err := ServiceAddress("b:1", data); err != nil || addr != tc.rpc {
			t.Errorf("ServiceAddress of RegistrationData(%q) = %q, %v", tc.rpc, addr, err)
		}
	}
}

// znodeOwner returns the ephemeral owner of path, or -1 if it is missing.
func znodeOwner(t *testing.T, conn *zkclient.Session, path string) int64 {
	t.Helper()
	st, ok, err := conn.Exists(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return -1
	}
	return st.EphemeralOwner
}

// waitZnode waits, with watches, until path's ephemeral owner (-1:
// missing) satisfies cond, and returns it.
func waitZnode(t *testing.T, conn *zkclient.Session, path, what string, cond func(owner int64) bool) int64 {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		st, ok, ev, err := conn.ExistsW(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		owner := int64(-1)
		if ok {
			owner = st.EphemeralOwner
		}
		if cond(owner) {
			return owner
		}
		select {
		case <-ev:
		case <-deadline:
			t.Fatalf("%s: %s owner %#x after %v", what, path, owner, waitTimeout)
		}
	}
}

func TestRegistration(t *testing.T) {
	s, conn := keeperStore(t, Config{})
	ctx := testContext(t)
	data, err := RegistrationData("192.0.2.9:3181", "")
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.NewRegistration(RegistrationConfig{ID: "192.0.2.9:3181", Data: data})
	if err != nil {
		t.Fatal(err)
	}
	const writable, readOnly = "/ledgers/available/192.0.2.9:3181", "/ledgers/available/readonly/192.0.2.9:3181"
	// Before Register, a mode change only decides where to register.
	if err := r.SetReadOnly(ctx, true); err != nil || znodeOwner(t, conn, readOnly) != -1 {
		t.Fatalf("SetReadOnly before Register: %v", err)
	}
	if err := r.Register(ctx); err != nil {
		t.Fatal(err)
	}
	if got := znodeOwner(t, conn, readOnly); got != conn.SessionID() || znodeOwner(t, conn, writable) != -1 {
		t.Fatalf("registered read-only: owner %#x; want %#x and no writable znode", got, conn.SessionID())
	}
	for _, ro := range []bool{false, true, false} {
		if err := r.SetReadOnly(ctx, ro); err != nil {
			t.Fatal(err)
		}
		reg, err := s.Bookies(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := Registry{Writable: []ledger.BookieID{"192.0.2.9:3181"}, ReadOnly: []ledger.BookieID{}}
		if ro {
			want = Registry{Writable: []ledger.BookieID{}, ReadOnly: []ledger.BookieID{"192.0.2.9:3181"}}
		}
		if !reg.Equal(want) || r.ReadOnly() != ro || r.Path() != map[bool]string{false: writable, true: readOnly}[ro] {
			t.Fatalf("after SetReadOnly(%v): registry %+v, path %s", ro, reg, r.Path())
		}
	}
	if addr, err := s.BookieAddress(ctx, "192.0.2.9:3181"); err != nil || addr != "192.0.2.9:3181" {
		t.Fatalf("BookieAddress = %q, %v", addr, err)
	}
	if err := r.Register(ctx); err != nil {
		t.Fatalf("second Register: %v", err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if znodeOwner(t, conn, writable) != -1 || znodeOwner(t, conn, readOnly) != -1 {
		t.Fatal("Close left a registration znode")
	}
	if err := r.Register(ctx); err == nil {
		t.Fatal("Register after Close succeeded")
	}
	if _, err := s.NewRegistration(RegistrationConfig{ID: "readonly"}); err == nil {
		t.Fatal("NewRegistration accepted the bookie id \"readonly\"")
	}
}

// TestRegistrationWaitsForStaleZnode: a znode left by another session
// (a crashed process of the same bookie) holds registration up until that
// session ends, or fails it after StaleWait.
func TestRegistrationWaitsForStaleZnode(t *testing.T) {
	addr := metadatatest.KeeperAddr(t)
	s := newTestStore(t, dial(t, addr), Config{})
	ctx := testContext(t)
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	const path = "/ledgers/available/b1:3181"
	stale := dial(t, addr)
	if _, _, err := stale.Create(t.Context(), path, nil, zkclient.CreateOptions{Flags: zkproto.FlagEphemeral}); err != nil {
		t.Fatal(err)
	}
	short, err := s.NewRegistration(RegistrationConfig{ID: "b1:3181", StaleWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := short.Register(ctx); !errors.Is(err, ErrRegistrationHeld) {
		t.Fatalf("Register over a live session's znode: %v, want ErrRegistrationHeld", err)
	}
	r, err := s.NewRegistration(RegistrationConfig{ID: "b1:3181", StaleWait: waitTimeout})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Register(ctx) }()
	// Register is waiting on the stale znode: it is still the other
	// session's, and Register has not returned.
	waitZnode(t, stale, path, "the stale znode", func(owner int64) bool { return owner == stale.SessionID() })
	select {
	case err := <-done:
		t.Fatalf("Register returned %v while another session held the znode", err)
	default:
	}
	stale.Close() // the "crashed" process's session ends
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	if reg, err := s.Bookies(ctx); err != nil || len(reg.Writable) != 1 {
		t.Fatalf("Bookies = %+v, %v", reg, err)
	}
}

// TestRegistrationRestoresDeletedZnode: the keeper goroutine puts back a
// registration znode that someone deleted.
func TestRegistrationRestoresDeletedZnode(t *testing.T) {
	s, conn := keeperStore(t, Config{})
	ctx := testContext(t)
	r, err := s.NewRegistration(RegistrationConfig{ID: "b2:3181", Data: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Register(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	path := r.Path()
	if err := conn.Delete(t.Context(), path, -1); err != nil {
		t.Fatal(err)
	}
	waitZnode(t, conn, path, "the znode put back", func(owner int64) bool { return owner == conn.SessionID() })
}

// TestRegistrationRetriesFailedMove: a move to read-only that fails is
// retried by the keeper goroutine, which also removes the old znode.
func TestRegistrationRetriesFailedMove(t *testing.T) {
	conn := dial(t, metadatatest.KeeperAddr(t))
	fc := newFaultConn(conn)
	s := newTestStore(t, fc, Config{})
	ctx := testContext(t)
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := s.NewRegistration(RegistrationConfig{ID: "b3:3181"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Register(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	const writable, readOnly = "/ledgers/available/b3:3181", "/ledgers/available/readonly/b3:3181"
	fc.failOn("Create", readOnly, errInjected)
	if err := r.SetReadOnly(ctx, true); !errors.Is(err, errInjected) {
		t.Fatalf("SetReadOnly with a failing create: %v", err)
	}
	if !r.ReadOnly() || znodeOwner(t, conn, writable) != conn.SessionID() {
		t.Fatal("a failed move lost the mode or the old registration")
	}
	fc.failOn("Create", readOnly, nil)
	waitZnode(t, conn, readOnly, "the retried move", func(owner int64) bool { return owner == conn.SessionID() })
	waitZnode(t, conn, writable, "the old znode's removal", func(owner int64) bool { return owner == -1 })
}

// TestRegistrationSurvivesSessionExpiry cuts a Dial session off until the
// server expires it. When the client is back (on a new session), the
// registration is made again, in the mode it had.
func TestRegistrationSurvivesSessionExpiry(t *testing.T) {
	addr := metadatatest.Keeper(t, metadatatest.FastTicks()).Addr().String()
	px := cutproxy.New(t, addr)
	ctx := testContext(t)
	s, sess := dialStore(t, px.Addr(), 400*time.Millisecond)
	r, err := s.NewRegistration(RegistrationConfig{ID: "b4:3181", ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Register(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	observer := dial(t, addr)
	path := r.Path()
	first := waitZnode(t, observer, path, "the registration", func(owner int64) bool { return owner > 0 })

	px.Cut()
	waitZnode(t, observer, path, "the expiry", func(owner int64) bool { return owner == -1 })
	px.Restore()
	second := waitZnode(t, observer, path, "the registration on the new session",
		func(owner int64) bool { return owner > 0 })
	if second == first || second != sess.zk.SessionID() {
		t.Fatalf("registered by session %#x; first session %#x, current %#x", second, first, sess.zk.SessionID())
	}
}

func TestDialRefusals(t *testing.T) {
	ctx := testContext(t)
	for _, cfg := range []DialConfig{
		{},
		{Servers: []string{"a:1,b:2"}},
		{Servers: []string{"127.0.0.1:1"}, SessionTimeout: -time.Second},
	} {
		if _, err := Dial(ctx, cfg); err == nil {
			t.Errorf("Dial(%+v) succeeded", cfg)
		}
	}
	// Nothing listens: Dial gives up after ConnectTimeout.
	addr := testhost.DeadAddr(t)
	_, err := Dial(ctx, DialConfig{Servers: []string{addr}, ConnectTimeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "no session") {
		t.Fatalf("Dial of a closed port: %v", err)
	}
}
