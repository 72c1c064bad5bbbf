package zkclient

import (
	"errors"
	"testing"

	"keeper/coordination/zkproto"
)

// TestReattach breaks a connection without closing its session and dials
// again with the session's id and password: the new connection has the
// same session, whose ephemeral node is still there. A wrong password, or
// a closed session, fails with ErrSessionExpired.
func TestReattach(t *testing.T) {
	addr := startServer(t)
	c := dial(t, addr, Options{})
	ctx := testCtx(t)
	if _, _, err := c.Create(ctx, "/e", nil, CreateOptions{Flags: zkproto.FlagEphemeral}); err != nil {
		t.Fatal(err)
	}
	id, passwd, zxid := c.SessionID(), c.SessionPasswd(), c.LastZxid()
	c.nc.Close() // the connection breaks; the session lives on
	<-c.Done()

	again := dial(t, addr, Options{SessionID: id, SessionPasswd: passwd, LastZxidSeen: zxid})
	if again.SessionID() != id || again.LastZxid() < zxid {
		t.Fatalf("reattached as session %#x (zxid %#x), want %#x (zxid at least %#x)", again.SessionID(), again.LastZxid(), id, zxid)
	}
	if _, ok, err := again.Exists(ctx, "/e", false); err != nil || !ok {
		t.Fatalf("the session's ephemeral node: exists %v, %v", ok, err)
	}

	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	other := dial(t, addr, Options{})
	wrong := other.SessionPasswd()
	wrong[0] ^= 0xff
	if _, err := Dial(ctx, addr, Options{SessionID: other.SessionID(), SessionPasswd: wrong}); !errors.Is(err, zkproto.ErrSessionExpired) {
		t.Fatalf("wrong password: %v, want session expired", err)
	}
	if _, err := Dial(ctx, addr, Options{SessionID: id, SessionPasswd: passwd}); !errors.Is(err, zkproto.ErrSessionExpired) {
		t.Fatalf("closed session: %v, want session expired", err)
	}
	if _, err := Dial(ctx, addr, Options{SessionID: id, SessionPasswd: passwd[:3]}); err == nil {
		t.Fatal("a short password was accepted")
	}
}
