package zkclient

import (
	"errors"
	"slices"
	"testing"
	"time"

	"keeper/coordination/zkproto"
)

func TestCreateModes(t *testing.T) {
	c := dial(t, startServer(t), Options{})
	ctx := testCtx(t)
	tests := []struct {
		name      string
		path      string
		opts      CreateOptions
		wantPath  string
		wantStat  bool // the reply carries a Stat
		ephemeral bool
		wantErr   zkproto.Code
	}{
		{name: "persistent", path: "/p", wantPath: "/p"},
		{name: "persistent create2", path: "/p2", opts: CreateOptions{Stat: true}, wantPath: "/p2", wantStat: true},
		{name: "ephemeral", path: "/e", opts: CreateOptions{Flags: zkproto.FlagEphemeral, Stat: true},
			wantPath: "/e", wantStat: true, ephemeral: true},
		{name: "sequential", path: "/s-", opts: CreateOptions{Flags: zkproto.FlagPersistentSequential},
			wantPath: "/s-0000000003"},
		{name: "ephemeral sequential", path: "/es-", opts: CreateOptions{Flags: zkproto.FlagEphemeralSequential},
			wantPath: "/es-0000000004"},
		{name: "container", path: "/c", opts: CreateOptions{Flags: zkproto.FlagContainer},
			wantPath: "/c", wantStat: true},
		{name: "ttl", path: "/t", opts: CreateOptions{Flags: zkproto.FlagPersistentWithTTL, TTL: time.Hour},
			wantPath: "/t", wantStat: true},
		{name: "ttl sequential", path: "/ts-", opts: CreateOptions{Flags: zkproto.FlagPersistentSequentialWithTTL, TTL: time.Hour},
			wantPath: "/ts-0000000007", wantStat: true},
		{name: "ttl without duration", path: "/x", opts: CreateOptions{Flags: zkproto.FlagPersistentWithTTL},
			wantErr: zkproto.CodeBadArguments},
		{name: "duration without ttl flag", path: "/x", opts: CreateOptions{TTL: time.Second},
			wantErr: zkproto.CodeBadArguments},
		{name: "exists", path: "/p", wantErr: zkproto.CodeNodeExists},
		{name: "no parent", path: "/none/x", wantErr: zkproto.CodeNoNode},
		{name: "empty acl", path: "/x", opts: CreateOptions{ACL: []zkproto.ACL{}}, wantErr: zkproto.CodeInvalidACL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, st, err := c.Create(ctx, tt.path, []byte("d"), tt.opts)
			if tt.wantErr != zkproto.CodeOK {
				var zerr *zkproto.Error
				if !errors.As(err, &zerr) || zerr.Code != tt.wantErr || zerr.Path != tt.path {
					t.Fatalf("err = %v, want %v for %s", err, tt.wantErr, tt.path)
				}
				return
			}
			if err != nil || path != tt.wantPath {
				t.Fatalf("Create = %q, %v; want %q", path, err, tt.wantPath)
			}
			if got := st.Czxid != 0; got != tt.wantStat {
				t.Fatalf("stat present = %v, want %v (%+v)", got, tt.wantStat, st)
			}
			if tt.wantStat && (st.EphemeralOwner == c.SessionID()) != tt.ephemeral {
				t.Fatalf("ephemeralOwner %#x, session %#x, want ephemeral %v", st.EphemeralOwner, c.SessionID(), tt.ephemeral)
			}
		})
	}
}

func TestReadWriteMethods(t *testing.T) {
	c := dial(t, startServer(t), Options{})
	ctx := testCtx(t)
	if _, _, err := c.Create(ctx, "/a", []byte("one"), CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	data, st, err := c.Get(ctx, "/a", false)
	if err != nil || string(data) != "one" || st.Version != 0 || st.DataLength != 3 {
		t.Fatalf("Get = %q %+v %v", data, st, err)
	}
	if st, err = c.Set(ctx, "/a", []byte("two"), 0); err != nil || st.Version != 1 {
		t.Fatalf("Set = %+v %v", st, err)
	}
	if _, err := c.Set(ctx, "/a", nil, 0); !errors.Is(err, zkproto.ErrBadVersion) {
		t.Fatalf("stale Set: %v", err)
	}
	if st, ok, err := c.Exists(ctx, "/a", false); err != nil || !ok || st.Version != 1 {
		t.Fatalf("Exists = %+v %v %v", st, ok, err)
	}
	if _, ok, err := c.Exists(ctx, "/none", false); err != nil || ok {
		t.Fatalf("Exists(/none) = %v %v", ok, err)
	}
	if _, _, err := c.Get(ctx, "/none", false); !errors.Is(err, zkproto.ErrNoNode) || err.(*zkproto.Error).Path != "/none" {
		t.Fatalf("Get(/none): %v", err)
	}
	for _, name := range []string{"b", "a"} {
		if _, _, err := c.Create(ctx, "/a/"+name, nil, CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kids, st, err := c.Children(ctx, "/a", false)
	slices.Sort(kids)
	if err != nil || !slices.Equal(kids, []string{"a", "b"}) || st.NumChildren != 2 {
		t.Fatalf("Children = %v %+v %v", kids, st, err)
	}
	if n, err := c.GetAllChildrenNumber(ctx, "/a"); err != nil || n != 2 {
		t.Fatalf("GetAllChildrenNumber = %d %v", n, err)
	}
	if err := c.Delete(ctx, "/a", -1); !errors.Is(err, zkproto.ErrNotEmpty) {
		t.Fatalf("Delete non-empty: %v", err)
	}
	if err := c.Delete(ctx, "/a/a", 5); !errors.Is(err, zkproto.ErrBadVersion) {
		t.Fatalf("Delete bad version: %v", err)
	}
	if err := c.Delete(ctx, "/a/a", 0); err != nil {
		t.Fatal(err)
	}
	if p, err := c.Sync(ctx, "/a"); err != nil || p != "/a" {
		t.Fatalf("Sync = %q %v", p, err)
	}
}

func TestACLAndAuth(t *testing.T) {
	c := dial(t, startServer(t), Options{})
	ctx := testCtx(t)
	who, err := c.WhoAmI(ctx)
	if err != nil || len(who) != 1 || who[0].AuthScheme != "ip" {
		t.Fatalf("WhoAmI = %+v %v", who, err)
	}
	if err := c.AddAuth(ctx, "digest", []byte("user:pass")); err != nil {
		t.Fatal(err)
	}
	who, err = c.WhoAmI(ctx)
	if err != nil || len(who) != 2 || who[1] != (zkproto.ClientInfo{AuthScheme: "digest", User: "user"}) {
		t.Fatalf("WhoAmI after auth = %+v %v", who, err)
	}
	if _, _, err := c.Create(ctx, "/secret", []byte("x"), CreateOptions{ACL: zkproto.CreatorAllACL}); err != nil {
		t.Fatal(err)
	}
	acl, st, err := c.GetACL(ctx, "/secret")
	want := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.ID{Scheme: "digest", ID: "user:smGaoVKd/cQkjm7b88GyorAUz20="}}}
	if err != nil || !slices.Equal(acl, want) || st.Aversion != 0 {
		t.Fatalf("GetACL = %+v %+v %v", acl, st, err)
	}
	if _, err := c.SetACL(ctx, "/secret", zkproto.OpenACLUnsafe, 3); !errors.Is(err, zkproto.ErrBadVersion) {
		t.Fatalf("SetACL stale version: %v", err)
	}
	if st, err = c.SetACL(ctx, "/secret", zkproto.ReadACLUnsafe, 0); err != nil || st.Aversion != 1 {
		t.Fatalf("SetACL = %+v %v", st, err)
	}
	if _, err := c.Set(ctx, "/secret", nil, -1); !errors.Is(err, zkproto.ErrNoAuth) {
		t.Fatalf("Set without write permission: %v", err)
	}
}

func TestAuthFailedEndsConnection(t *testing.T) {
	c := dial(t, startServer(t), Options{})
	ctx := testCtx(t)
	if err := c.AddAuth(ctx, "nosuchscheme", []byte("x")); !errors.Is(err, zkproto.ErrAuthFailed) {
		t.Fatalf("AddAuth: %v", err)
	}
	<-c.Done()
	_, _, err := c.Get(ctx, "/", false)
	if !errors.Is(err, zkproto.ErrAuthFailed) || zkproto.CodeOf(err) != zkproto.CodeAuthFailed {
		t.Fatalf("call after rejected auth: %v", err)
	}
}

func TestMulti(t *testing.T) {
	c := dial(t, startServer(t), Options{})
	ctx := testCtx(t)
	res, err := c.Multi(ctx,
		zkproto.MultiOp{Op: zkproto.OpCreate, Record: &zkproto.CreateRequest{Path: "/m", ACL: zkproto.OpenACLUnsafe}},
		zkproto.MultiOp{Op: zkproto.OpSetData, Record: &zkproto.SetDataRequest{Path: "/m", Data: []byte("x"), Version: 0}},
		zkproto.MultiOp{Op: zkproto.OpCheck, Record: &zkproto.CheckVersionRequest{Path: "/m", Version: 1}},
	)
	if err != nil || len(res) != 3 || res[0].Op != zkproto.OpCreate || res[1].Op != zkproto.OpSetData || res[2].Op != zkproto.OpCheck {
		t.Fatalf("Multi = %+v %v", res, err)
	}
	if r := res[0].Record.(*zkproto.CreateResponse); r.Path != "/m" {
		t.Fatalf("create result %+v", r)
	}
	res, err = c.Multi(ctx,
		zkproto.MultiOp{Op: zkproto.OpCreate, Record: &zkproto.CreateRequest{Path: "/n", ACL: zkproto.OpenACLUnsafe}},
		zkproto.MultiOp{Op: zkproto.OpDelete, Record: &zkproto.DeleteRequest{Path: "/m", Version: 7}},
		zkproto.MultiOp{Op: zkproto.OpDelete, Record: &zkproto.DeleteRequest{Path: "/m", Version: -1}},
	)
	var zerr *zkproto.Error
	if !errors.As(err, &zerr) || zerr.Code != zkproto.CodeBadVersion || zerr.Path != "/m" || len(res) != 3 {
		t.Fatalf("failed Multi = %+v %v", res, err)
	}
	if codes := []zkproto.Code{res[0].Err, res[1].Err, res[2].Err}; !slices.Equal(codes,
		[]zkproto.Code{zkproto.CodeOK, zkproto.CodeBadVersion, zkproto.CodeRuntimeInconsistency}) {
		t.Fatalf("result codes %v", codes)
	}
	if _, ok, _ := c.Exists(ctx, "/n", false); ok {
		t.Fatal("failed multi left /n behind")
	}
}

func TestEphemeralsAndGoRejects(t *testing.T) {
	c := dial(t, startServer(t), Options{})
	ctx := testCtx(t)
	for _, p := range []string{"/x", "/y"} {
		if _, _, err := c.Create(ctx, p, nil, CreateOptions{Flags: zkproto.FlagEphemeral}); err != nil {
			t.Fatal(err)
		}
	}
	eph, err := c.GetEphemerals(ctx, "/")
	slices.Sort(eph)
	if err != nil || !slices.Equal(eph, []string{"/x", "/y"}) {
		t.Fatalf("GetEphemerals = %v %v", eph, err)
	}
	if eph, err := c.GetEphemerals(ctx, "/y"); err != nil || !slices.Equal(eph, []string{"/y"}) {
		t.Fatalf("GetEphemerals(/y) = %v %v", eph, err)
	}
	for _, op := range []zkproto.Op{zkproto.OpPing, zkproto.OpCloseSession, zkproto.OpCheck, zkproto.Op(999)} {
		if _, _, err := c.Do(ctx, op, nil); err == nil {
			t.Errorf("Do(%v) succeeded", op)
		}
	}
}
