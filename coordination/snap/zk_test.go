package snap

import (
	"bytes"
	"cmp"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/datatree"
	"keeper/coordination/zkproto"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
	"keeper/verify/compat/zkreal"
)

// These tests run a real Apache ZooKeeper 3.8 (verify/compat/zkreal): they skip
// when it is not installed, unless KEEPER_REQUIRE_ZK is set.

// superSecret is the password of the "super" digest user the servers are
// started with, which bypasses ACLs.
const superSecret = "super:secret"

func zkOptions(dataDir string, extra map[string]string) zkreal.Options {
	sum := sha1.Sum([]byte(superSecret))
	cfg := map[string]string{
		// zkreal writes its own dataDir first; ZooKeeper reads zoo.cfg as
		// Java properties, where the last value of a key wins.
		"dataDir": dataDir,
	}
	for k, v := range extra {
		cfg[k] = v // keys ZooKeeper does not know become zookeeper.<key> system properties
	}
	return zkreal.Options{
		ExtendedTypes: true,
		SuperDigest:   "super:" + base64.StdEncoding.EncodeToString(sum[:]),
		ExtraConfig:   cfg,
	}
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

func connectZK(t *testing.T, s *zkreal.Server) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{s.Addr()}, 30*time.Second, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("connect to %s: %v", s.Addr(), err)
	}
	t.Cleanup(conn.Close)
	if err := conn.AddAuth("digest", []byte(superSecret)); err != nil {
		t.Fatalf("add auth: %v", err)
	}
	return conn
}

// liveNode is what a client sees of a node.
type liveNode struct {
	data []byte
	stat zk.Stat
	acl  []zkproto.ACL
}

func readLive(t *testing.T, conn *zk.Conn, path string) liveNode {
	t.Helper()
	data, stat, err := conn.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	acls, _, err := conn.GetACL(path)
	if err != nil {
		t.Fatalf("get ACL %s: %v", path, err)
	}
	n := liveNode{data: data, stat: *stat}
	for _, a := range acls {
		n.acl = append(n.acl, zkproto.ACL{Perms: a.Perms, ID: zkproto.ID{Scheme: a.Scheme, ID: a.ID}})
	}
	return n
}

// diffLive compares a snapshot's node with what a client saw of it.
func diffLive(tree *datatree.Tree, path string, live liveNode) string {
	n := tree.Node(path)
	if n == nil {
		return path + ": missing from the snapshot"
	}
	var out []string
	if (n.Data() == nil) != (live.data == nil) || !bytes.Equal(n.Data(), live.data) {
		out = append(out, fmt.Sprintf("data %q (null %v) vs live %q (null %v)", n.Data(), n.Data() == nil, live.data, live.data == nil))
	}
	st := n.Stat()
	got := zk.Stat{Czxid: st.Czxid, Mzxid: st.Mzxid, Ctime: st.Ctime, Mtime: st.Mtime, Version: st.Version,
		Cversion: st.Cversion, Aversion: st.Aversion, EphemeralOwner: st.EphemeralOwner, DataLength: st.DataLength,
		NumChildren: st.NumChildren, Pzxid: st.Pzxid}
	if got != live.stat {
		out = append(out, fmt.Sprintf("stat %+v vs live %+v", got, live.stat))
	}
	if acl := tree.ACL(n); !reflect.DeepEqual(acl, live.acl) {
		out = append(out, fmt.Sprintf("acl %v vs live %v", acl, live.acl))
	}
	if len(out) == 0 {
		return ""
	}
	return path + ": " + strings.Join(out, "; ")
}

// allPaths lists every node of tree in pre-order.
func allPaths(tree *datatree.Tree) []string {
	var out []string
	stack := []string{"/"}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		out = append(out, p)
		children := tree.Node(p).Children()
		for i := len(children) - 1; i >= 0; i-- {
			stack = append(stack, strings.TrimSuffix(p, "/")+"/"+children[i])
		}
	}
	return out
}

// TestReadZooKeeperSnapshot has Apache ZooKeeper write snapshots of nodes
// of every kind and checks that Read sees exactly what clients saw: paths,
// data (null and empty), stats, ACLs, sessions, and the tree digest.
func TestReadZooKeeperSnapshot(t *testing.T) {
	dataDir := t.TempDir()
	s := zkreal.Start(t, zkOptions(dataDir, nil))
	conn := connectZK(t, s)
	if err := conn.AddAuth("digest", []byte("bob:pw")); err != nil {
		t.Fatal(err)
	}
	world := zk.WorldACL(zk.PermAll)
	mustCreate := func(path string, data []byte, flags int32, acl []zk.ACL) string {
		t.Helper()
		var got string
		var err error
		switch flags {
		case zk.FlagContainer:
			got, err = conn.CreateContainer(path, data, flags, acl)
		case zk.FlagTTL:
			got, err = conn.CreateTTL(path, data, flags, acl, 90*time.Minute)
		default:
			got, err = conn.Create(path, data, flags, acl)
		}
		if err != nil {
			t.Fatalf("create %s: %v", path, err)
		}
		return got
	}
	paths := []string{
		mustCreate("/p", []byte("persistent"), 0, world),
		mustCreate("/p/null", nil, 0, world),
		mustCreate("/p/empty", []byte{}, 0, zk.DigestACL(zk.PermAll, "bob", "pw")),
		mustCreate("/p/seq-", []byte("s"), zk.FlagSequence, world),
		mustCreate("/p/seq-", []byte("s"), zk.FlagSequence, zk.WorldACL(zk.PermRead)),
		mustCreate("/eph", []byte("e"), zk.FlagEphemeral, world),
		mustCreate("/p/eseq-", nil, zk.FlagEphemeralSequential, world),
		mustCreate("/box", []byte("c"), zk.FlagContainer, world),
		mustCreate("/box/item", []byte("i"), 0, world),
		mustCreate("/ttl", []byte("t"), zk.FlagTTL, world),
		mustCreate("/secret", []byte("x"), 0, append(zk.DigestACL(zk.PermRead, "bob", "pw"), zk.WorldACL(zk.PermAdmin)...)),
	}
	if _, err := conn.Set("/p", []byte("changed"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.SetACL("/p/null", zk.DigestACL(zk.PermAll, "bob", "pw"), 0); err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete("/p/seq-0000000002", -1); err != nil {
		t.Fatal(err)
	}
	paths = slices.DeleteFunc(paths, func(p string) bool { return p == "/p/seq-0000000002" })
	paths = append(paths, "/", "/zookeeper")
	want := map[string]liveNode{}
	for _, p := range paths {
		want[p] = readLive(t, conn, p)
	}
	session := conn.SessionID()
	s.Stop() // the session stays open, so its ephemerals outlive the restart

	// On start, ZooKeeper replays its log and writes a snapshot of the result.
	zkreal.Start(t, zkOptions(dataDir, nil)).Stop()
	snapDir := filepath.Join(dataDir, "version-2")
	snap, skipped, err := NewestValid(vfs.Default, snapDir, 0)
	if err != nil || snap == nil || len(skipped) != 0 {
		t.Fatalf("NewestValid(%s) = %v, %v, %v", snapDir, snap, skipped, err)
	}
	checkZKSnapshot(t, snap, want, session)

	// The same with gzip compression.
	zkreal.Start(t, zkOptions(dataDir, map[string]string{"snapshot.compression.method": "gz"})).Stop()
	infos, err := List(vfs.Default, snapDir)
	if err != nil || len(infos) == 0 || infos[0].Compression != CompressionGzip {
		t.Fatalf("no gzip snapshot: %v, %v", infos, err)
	}
	gz, err := Read(vfs.Default, filepath.Join(snapDir, infos[0].Name), 0)
	if err != nil {
		t.Fatalf("read %s: %v", infos[0].Name, err)
	}
	checkZKSnapshot(t, gz, want, session)
}

func checkZKSnapshot(t *testing.T, snap *Snapshot, want map[string]liveNode, session int64) {
	t.Helper()
	t.Logf("%s: %d sessions, %d nodes, digest %+v (checked %v)", snap.Name, len(snap.Sessions),
		snap.Tree.NodeCount(), snap.Digest, snap.DigestChecked)
	for _, p := range slices.Sorted(maps.Keys(want)) {
		if d := diffLive(snap.Tree, p, want[p]); d != "" {
			t.Error(d)
		}
	}
	for _, p := range allPaths(snap.Tree) {
		if _, ok := want[p]; !ok && p != datatree.QuotaPath && p != datatree.ConfigPath {
			t.Errorf("snapshot has %s, which no client created", p)
		}
	}
	if !slices.ContainsFunc(snap.Sessions, func(e SessionEntry) bool { return e.ID == session && e.TimeoutMs > 0 }) {
		t.Errorf("session %#x missing from %v", session, snap.Sessions)
	}
	tree := snap.Tree
	if tree.Node("/eph").Owner() != session || !tree.Node("/box").IsContainer() || tree.Node("/ttl").TTL() != 90*60*1000 {
		t.Errorf("node kinds lost: eph owner %#x, box container %v, ttl %d",
			tree.Node("/eph").Owner(), tree.Node("/box").IsContainer(), tree.Node("/ttl").TTL())
	}
	if !snap.DigestChecked {
		t.Errorf("digest %+v not checked against the tree (snapshot zxid %s)", snap.Digest, snap.Zxid)
	}
}

// TestZooKeeperReadsOurSnapshot writes a snapshot of a random tree, starts
// Apache ZooKeeper on it, and reads every node back through a client: data,
// stat and ACL must be what the tree holds. Then it reads the snapshot
// ZooKeeper wrote on start and compares the trees.
func TestZooKeeperReadsOurSnapshot(t *testing.T) {
	for _, opts := range []Options{{}, {LastProcessedZxid: true}, {Compression: CompressionGzip}} {
		t.Run(fmt.Sprintf("compression=%v,lpz=%v", opts.Compression, opts.LastProcessedZxid), func(t *testing.T) {
			tree, sessions := randomTree(t, 11, 400)
			for i := range sessions {
				sessions[i].TimeoutMs = 120_000 // ZooKeeper must not expire them while we look
			}
			z := tree.LastZxid()
			dataDir := t.TempDir()
			snapDir := filepath.Join(dataDir, "version-2")
			if err := vfs.MkdirAllSync(vfs.Default, snapDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := Write(vfs.Default, snapDir, z, sessions, tree, digestOf(tree, z), opts); err != nil {
				t.Fatal(err)
			}
			s := zkreal.Start(t, zkOptions(dataDir, nil))
			conn := connectZK(t, s)
			paths := allPaths(tree)
			for _, p := range paths {
				if d := diffLive(tree, p, readLive(t, conn, p)); d != "" {
					t.Error(d)
				}
			}
			mntr, err := s.FourLetter("mntr")
			if err != nil || !strings.Contains(mntr, "zk_digest_mismatches_count\t0\n") {
				t.Errorf("ZooKeeper reports digest mismatches (or mntr failed: %v):\n%s", err, mntr)
			}
			s.Stop()
			t.Logf("%d nodes read back; zxid %s", len(paths), z)

			back, err := Read(vfs.Default, filepath.Join(snapDir, Name(z, CompressionNone)), 0)
			if err != nil {
				t.Fatalf("read ZooKeeper's rewrite: %v", err)
			}
			if d := diffTrees(tree, back.Tree); d != "" {
				t.Errorf("ZooKeeper's snapshot of our tree differs:\n%s", d)
			}
			wantSessions := slices.Clone(sessions)
			slices.SortFunc(wantSessions, func(a, b SessionEntry) int { return cmp.Compare(a.ID, b.ID) })
			gotSessions := slices.Clone(back.Sessions)
			slices.SortFunc(gotSessions, func(a, b SessionEntry) int { return cmp.Compare(a.ID, b.ID) })
			if !slices.Equal(gotSessions, wantSessions) {
				t.Errorf("sessions %v, want %v", gotSessions, wantSessions)
			}
		})
	}
}

// startRecorder is a testing.TB whose Fatalf records instead of stopping,
// so a test can expect zkreal.Start to fail.
type startRecorder struct {
	testing.TB
	failed string
}

func (r *startRecorder) Helper() {}

func (r *startRecorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// TestZooKeeperTrailerChecks backs two decisions with ZooKeeper 3.8's own
// behaviour: it compares a snapshot's digest record with the tree it loads
// (so the zero mismatch count above means something), and it cannot read a
// 3.9 trailer that has no digest record before it, which is why Write
// refuses to write one.
func TestZooKeeperTrailerChecks(t *testing.T) {
	tree, sessions := smallTree(t)
	z := tree.LastZxid()
	wrong := *digestOf(tree, z)
	wrong.TreeDigest++
	for _, tt := range []struct {
		name           string
		digest         *Digest
		lpz            bool
		starts         bool
		mismatchMetric string
	}{
		{"wrong digest is reported", &wrong, false, true, "zk_digest_mismatches_count\t1\n"},
		{"3.9 trailer after a digest is ignored", digestOf(tree, z), true, true, "zk_digest_mismatches_count\t0\n"},
		{"3.9 trailer without a digest breaks 3.8", nil, true, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := t.TempDir()
			snapDir := filepath.Join(dataDir, "version-2")
			if err := vfs.MkdirAllSync(vfs.Default, snapDir, 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := vfs.Default.Create(filepath.Join(snapDir, Name(z, CompressionNone)))
			if err != nil {
				t.Fatal(err)
			}
			var lpz *zxid.ID
			if tt.lpz {
				lpz = &z
			}
			if err := encode(f, sessions, tree, tt.digest, lpz); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if zkreal.Available() != nil {
				zkreal.Start(t, zkreal.Options{}) // skips, or fails under KEEPER_REQUIRE_ZK
				return
			}
			r := &startRecorder{TB: t}
			s := zkreal.Start(r, zkOptions(dataDir, nil))
			if (s != nil) != tt.starts {
				t.Fatalf("ZooKeeper started: %v, want %v (%.500s)", s != nil, tt.starts, r.failed)
			}
			if s == nil {
				return
			}
			if mntr, err := s.FourLetter("mntr"); err != nil || !strings.Contains(mntr, tt.mismatchMetric) {
				t.Errorf("mntr lacks %q (err %v):\n%s", tt.mismatchMetric, err, mntr)
			}
		})
	}
}
