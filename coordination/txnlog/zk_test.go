package txnlog_test

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/txn"
	"keeper/coordination/txnlog"
	"keeper/coordination/zkproto"
	"keeper/internal/vfs"
	"keeper/verify/compat/zkreal"
)

// quiet drops go-zookeeper's log lines.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

func connectZK(t *testing.T, s *zkreal.Server) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{s.Addr()}, 10*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("connect to %s: %v", s.Addr(), err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// zkWorkload runs a few writes of every kind against a real ZooKeeper and
// returns the session's id and the sequential node's name. It returns once
// the session's close is committed (its ephemeral is gone).
func zkWorkload(t *testing.T, s *zkreal.Server) (session int64, seqPath string) {
	t.Helper()
	acl := zk.WorldACL(zk.PermAll)
	conn := connectZK(t, s)
	mustZK := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err := conn.Create("/a", []byte("v1"), 0, acl)
	mustZK("create /a", err)
	_, err = conn.Set("/a", []byte("v2"), 0)
	mustZK("set /a", err)
	_, err = conn.Create("/a/e", []byte("eph"), zk.FlagEphemeral, acl)
	mustZK("create /a/e", err)
	seqPath, err = conn.Create("/a/s-", nil, zk.FlagSequence, acl)
	mustZK("create /a/s-", err)
	_, err = conn.Multi(
		&zk.CreateRequest{Path: "/m", Data: []byte("multi"), Acl: acl},
		&zk.SetDataRequest{Path: "/a", Data: []byte("v3"), Version: -1},
		&zk.DeleteRequest{Path: seqPath, Version: -1},
	)
	mustZK("multi", err)
	if _, err := conn.Multi(
		&zk.CheckVersionRequest{Path: "/a", Version: 100},
		&zk.CreateRequest{Path: "/never", Acl: acl},
	); err == nil {
		t.Fatal("a multi with a failing check succeeded")
	}
	mustZK("delete /m", conn.Delete("/m", -1))

	watcher := connectZK(t, s)
	_, _, deleted, err := watcher.ExistsW("/a/e")
	mustZK("watch /a/e", err)
	session = conn.SessionID()
	conn.Close()
	select {
	case ev := <-deleted:
		if ev.Type != zk.EventNodeDeleted {
			t.Fatalf("watch on /a/e: %+v", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the ephemeral /a/e outlived its session's close")
	}
	return session, seqPath
}

// describe renders a txn as "type path[,path...]" with the details that
// matter here.
func describe(tx *txn.Txn) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v", tx.Header.Type)
	describeRecord(&b, tx.Record)
	return b.String()
}

func describeRecord(b *strings.Builder, rec any) {
	switch r := rec.(type) {
	case *txn.Create:
		fmt.Fprintf(b, " %s %q eph=%v acl=%v", r.Path, r.Data, r.Ephemeral, r.ACL)
	case *txn.SetData:
		fmt.Fprintf(b, " %s %q v=%d", r.Path, r.Data, r.Version)
	case *txn.Delete:
		fmt.Fprintf(b, " %s", r.Path)
	case *txn.CloseSession:
		fmt.Fprintf(b, " %v", r.Paths)
	case *txn.Error:
		fmt.Fprintf(b, " err=%d", r.Err)
	case *txn.Multi:
		for _, op := range r.Ops {
			fmt.Fprintf(b, " [%v", op.Type)
			describeRecord(b, op.Record)
			b.WriteString("]")
		}
	}
}

// TestReadRealZooKeeperLog runs writes on a real Apache ZooKeeper 3.8,
// reads its log with this package, checks every txn, and rewrites the log
// with this package: the file must come out byte for byte the same. Then a
// second ZooKeeper starts on the rewritten log and serves the same data.
//
// It is skipped when Java or ZooKeeper is missing, unless KEEPER_REQUIRE_ZK
// is set (see verify/compat/zkreal).
func TestReadRealZooKeeperLog(t *testing.T) {
	s := zkreal.Start(t, zkreal.Options{})
	session, seqPath := zkWorkload(t, s)
	s.Stop()

	it, err := txnlog.Read(vfs.Default, s.DataDir(), 0, txnlog.Config{})
	mustOK(t, err)
	var got []string
	var payloads [][]byte
	for {
		tx, err := it.Next()
		if err == io.EOF {
			break
		}
		mustOK(t, err)
		payloads = append(payloads, bytes.Clone(it.Payload()))
		if !bytes.Equal(txn.Marshal(tx), it.Payload()) {
			t.Errorf("txn %v does not re-encode to ZooKeeper's bytes (a txn package issue)", tx.Header.Zxid)
		}
		if tx.Header.ClientID == session {
			got = append(got, describe(tx))
		}
	}
	mustOK(t, it.Close())
	world := []zkproto.ACL{{Perms: 31, ID: zkproto.ID{Scheme: "world", ID: "anyone"}}}
	want := []string{
		"createSession",
		fmt.Sprintf("create /a \"v1\" eph=false acl=%v", world),
		"setData /a \"v2\" v=1",
		fmt.Sprintf("create /a/e \"eph\" eph=true acl=%v", world),
		fmt.Sprintf("create %s \"\" eph=false acl=%v", seqPath, world),
		fmt.Sprintf("multi [create /m \"multi\" eph=false acl=%v] [setData /a \"v3\" v=2] [delete %s]", world, seqPath),
		"multi [error err=-103] [error err=-2]",
		"delete /m",
		"closeSession [/a/e]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("txns of session %#x:\n got %q\nwant %q", session, got, want)
	}

	files, err := txnlog.Files(vfs.Default, s.DataDir())
	mustOK(t, err)
	if len(files) != 1 {
		t.Fatalf("ZooKeeper wrote %d log files; the rewrite below expects one", len(files))
	}
	zkBytes, err := vfs.ReadFile(vfs.Default, files[0].Path)
	mustOK(t, err)
	if len(zkBytes) != 64<<20+16 {
		t.Errorf("ZooKeeper's log file is %d bytes", len(zkBytes))
	}

	ours := t.TempDir()
	l, err := txnlog.Open(vfs.Default, ours, txnlog.Config{})
	mustOK(t, err)
	for _, p := range payloads {
		mustOK(t, l.AppendPayload(p))
	}
	mustOK(t, l.Close())
	ourBytes, err := vfs.ReadFile(vfs.Default, filepath.Join(ours, txnlog.DirName, files[0].Name()))
	mustOK(t, err)
	if !bytes.Equal(ourBytes, zkBytes) {
		i := 0
		for i < min(len(ourBytes), len(zkBytes)) && ourBytes[i] == zkBytes[i] {
			i++
		}
		t.Fatalf("our rewrite of %s differs from ZooKeeper's at byte %d (sizes %d and %d)",
			files[0].Name(), i, len(ourBytes), len(zkBytes))
	}

	// ZooKeeper refuses logs without a snapshot unless told to trust an
	// empty snapshot directory; it then replays our log from zxid 0.
	s2 := zkreal.Start(t, zkreal.Options{ExtraConfig: map[string]string{
		"dataLogDir":           ours,
		"snapshot.trust.empty": "true",
	}})
	conn := connectZK(t, s2)
	data, stat, err := conn.Get("/a")
	if err != nil || string(data) != "v3" || stat.Version != 2 || stat.NumChildren != 0 {
		t.Errorf("ZooKeeper on our log: get /a = %q, %+v, %v", data, stat, err)
	}
	for _, gone := range []string{"/m", "/a/e", seqPath, "/never"} {
		if ok, _, err := conn.Exists(gone); ok || err != nil {
			t.Errorf("ZooKeeper on our log: %s exists=%v err=%v", gone, ok, err)
		}
	}
}
