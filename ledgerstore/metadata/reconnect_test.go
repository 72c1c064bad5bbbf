package metadata

import (
	"testing"
	"time"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/internal/cutproxy"
	"keeper/internal/testhost"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata/metadatatest"
)

// TestWatchesSurviveReconnect cuts a Dial session's connection, for less
// than its timeout, while a bookie registers and a ledger's metadata
// changes: the session is reattached (the same id, its watches set
// again), and both watches report what changed while it was away.
func TestWatchesSurviveReconnect(t *testing.T) {
	addr := metadatatest.KeeperAddr(t)
	px := cutproxy.New(t, addr)
	ctx := testContext(t)
	s, sess := dialStore(t, px.Addr(), testhost.Scale(10*time.Second))
	if _, _, err := s.Create(ctx, 1, sampleMetadata()); err != nil {
		t.Fatal(err)
	}
	ledgerW, bookies := s.Watch(ctx, 1), s.WatchBookies(ctx)
	next(t, ledgerW)
	next(t, bookies)
	id := sess.zk.SessionID()

	px.Cut()
	other := dial(t, addr)
	if _, _, err := other.Create(ctx, "/ledgers/available/b1:3181", nil,
		zkclient.CreateOptions{Flags: zkproto.FlagEphemeral}); err != nil {
		t.Fatal(err)
	}
	if _, err := newTestStore(t, other, Config{}).Write(ctx, 1, sampleMetadata(), 0); err != nil {
		t.Fatal(err)
	}
	px.Restore()

	if got, ok := next(t, bookies); !ok || !got.Equal(Registry{Writable: []ledger.BookieID{"b1:3181"}}) {
		t.Fatalf("bookies after the reconnect: %+v (open %v)", got, ok)
	}
	if u, ok := next(t, ledgerW); !ok || u.Version != 1 {
		t.Fatalf("ledger after the reconnect: %+v (open %v)", u, ok)
	}
	if got := sess.zk.SessionID(); got != id {
		t.Fatalf("session %#x after the reconnect, want %#x reattached", got, id)
	}
}
