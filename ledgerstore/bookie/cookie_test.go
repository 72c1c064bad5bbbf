package bookie

import (
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/internal/vfs"
	"keeper/ledgerstore/bkproto"
)

func TestCookieEncoding(t *testing.T) {
	c := Cookie{LayoutVersion: 5, BookieID: "10.0.0.1:3181", JournalDirs: "/j1,/j2",
		LedgerDirs: encodeDirs([]string{"/l1", "/l2"}), InstanceID: "c0ffee-id", IndexDirs: encodeDirs([]string{"/i"})}
	want := "5\n" +
		"bookieHost: \"10.0.0.1:3181\"\n" +
		"journalDir: \"/j1,/j2\"\n" +
		"ledgerDirs: \"2\\t/l1\\t/l2\"\n" +
		"instanceId: \"c0ffee-id\"\n" +
		"indexDirs: \"1\\t/i\"\n"
	if got := string(c.Encode()); got != want {
		t.Fatalf("Encode:\n%s\nwant:\n%s", got, want)
	}
	back, err := ParseCookie(c.Encode())
	if err != nil || back != c {
		t.Fatalf("round trip: %+v %v", back, err)
	}
	tests := []struct {
		name, text string
		want       Cookie
		err        bool
	}{
		{name: "layout 4 without instance id", text: "4\nbookieHost: \"h:1\"\njournalDir: \"/j\"\nledgerDirs: \"1\\t/l\"\n",
			want: Cookie{LayoutVersion: 4, BookieID: "h:1", JournalDirs: "/j", LedgerDirs: "1\t/l"}},
		{name: "layout 3", text: "3\nh:1\n/j\n1\t/l\n",
			want: Cookie{LayoutVersion: 3, BookieID: "h:1", JournalDirs: "/j", LedgerDirs: "1\t/l"}},
		{name: "octal escapes and unknown fields", text: "5\nbookieHost: \"h\\303\\251:1\"\njournalDir: \"/j\"\nledgerDirs: \"1\\t/l\"\nfuture: 3\n",
			want: Cookie{LayoutVersion: 5, BookieID: "hé:1", JournalDirs: "/j", LedgerDirs: "1\t/l"}},
		{name: "too old", text: "2\nh:1\n/j\n/l\n", err: true},
		{name: "no version", text: "bookieHost: \"h:1\"\n", err: true},
		{name: "missing required field", text: "5\nbookieHost: \"h:1\"\n", err: true},
		{name: "empty", text: "", err: true},
	}
	for _, tt := range tests {
		got, err := ParseCookie([]byte(tt.text))
		if (err != nil) != tt.err || (!tt.err && got != tt.want) {
			t.Errorf("%s: %+v, %v", tt.name, got, err)
		}
		if err != nil && !errors.Is(err, ErrInvalidCookie) {
			t.Errorf("%s: error %v does not match ErrInvalidCookie", tt.name, err)
		}
	}
	if got := escapeText("a\"b\\c'\x01é"); got != `a\"b\\c\'\001\303\251` {
		t.Errorf("escapeText: %s", got)
	}
}

func TestCookieVerify(t *testing.T) {
	master := Cookie{LayoutVersion: 5, BookieID: "b:1", JournalDirs: "/j", LedgerDirs: "1\t/l", InstanceID: "x"}
	for name, mutate := range map[string]func(*Cookie){
		"bookie id":   func(c *Cookie) { c.BookieID = "b:2" },
		"journal":     func(c *Cookie) { c.JournalDirs = "/j2" },
		"ledger dirs": func(c *Cookie) { c.LedgerDirs = "1\t/l2" },
		"index dirs":  func(c *Cookie) { c.IndexDirs = "1\t/i" },
		"instance":    func(c *Cookie) { c.InstanceID = "y" },
	} {
		other := master
		mutate(&other)
		if err := master.Verify(other); !errors.Is(err, ErrInvalidCookie) {
			t.Errorf("%s: %v", name, err)
		}
	}
	old := master
	old.LayoutVersion, old.IndexDirs = 4, ""
	withIndex := master
	withIndex.IndexDirs = "1\t/i"
	if err := withIndex.Verify(old); err != nil {
		t.Errorf("a layout 4 cookie has no index dirs to compare: %v", err)
	}
}

// removeTree removes everything under dir on a MemFS.
func removeTree(t *testing.T, fsys vfs.FS, dir string) {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		return
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		if fi, err := fsys.Stat(p); err == nil && fi.IsDir() {
			removeTree(t, fsys, p)
		}
		if err := fsys.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCookiesStampedAndChecked(t *testing.T) {
	e := newEnv(t, true)
	b := e.start()
	addEntries(t, dial(t, b), 1, 0, 5)
	zc := e.zkConn()
	data, _, err := zc.Get(t.Context(), "/ledgers/cookies/"+e.id)
	if err != nil {
		t.Fatal(err)
	}
	inMeta, err := ParseCookie(data)
	if err != nil {
		t.Fatal(err)
	}
	instance, _, err := zc.Get(t.Context(), "/ledgers/INSTANCEID")
	if err != nil || inMeta.InstanceID != string(instance) || inMeta.BookieID != e.id ||
		inMeta.LedgerDirs != "2\t/ledgers0\t/ledgers1" || inMeta.JournalDirs != "/journal" {
		t.Fatalf("metadata cookie %+v (instance %q, %v)", inMeta, instance, err)
	}
	for _, dir := range cookieDirs(e.config()) {
		c, found, err := readDirCookie(e.fs, dir)
		if err != nil || !found || c != inMeta {
			t.Fatalf("cookie in %s: %+v found=%v %v", dir, c, found, err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = e.start() // the same disks and metadata: it starts
	_ = b.Close()
}

// TestCookieRefusals checks each refusal of the decision table. Each case
// starts from a bookie that ran once, changes something, and expects the
// restart to fail with a message that says why.
func TestCookieRefusals(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, e *env, zc *zkclient.Session)
		want   string
	}{
		{"wiped ledger disk", func(t *testing.T, e *env, _ *zkclient.Session) {
			removeTree(t, e.fs, "/ledgers1")
		}, "wiped or replaced"},
		{"swapped disk", func(t *testing.T, e *env, _ *zkclient.Session) {
			other := masterCookie(e.config(), "bookie-2.test:3181", "")
			if err := writeDirCookie(e.fs, "/ledgers1/current", other); err != nil {
				t.Fatal(err)
			}
		}, "swapped"},
		{"metadata cookie deleted", func(t *testing.T, e *env, zc *zkclient.Session) {
			if err := zc.Delete(t.Context(), "/ledgers/cookies/"+e.id, -1); err != nil {
				t.Fatal(err)
			}
		}, "lost this bookie's cookie"},
		{"metadata formatted again", func(t *testing.T, e *env, zc *zkclient.Session) {
			if _, err := zc.Set(t.Context(), "/ledgers/INSTANCEID", []byte("another-cluster"), -1); err != nil {
				t.Fatal(err)
			}
		}, "another cluster"},
		{"bookie id changed", func(t *testing.T, e *env, _ *zkclient.Session) {
			e.id = "renamed.test:3181"
		}, "the bookie id"},
		{"ledger directories changed", func(t *testing.T, e *env, _ *zkclient.Session) {
			e.tweak = func(c *Config) { c.LedgerDirs = []string{"/ledgers0"} }
		}, "ledgerDirectories"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, true)
			b := e.start()
			addEntries(t, dial(t, b), 1, 0, 5)
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			tt.change(t, e, e.zkConn())
			_, err := e.tryStart()
			if !errors.Is(err, ErrInvalidCookie) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("start: %v, want an invalid cookie error saying %q", err, tt.want)
			}
		})
	}
}

func TestDataWithoutCookieRefused(t *testing.T) {
	e := newEnv(t, true)
	if err := e.fs.MkdirAll("/ledgers0/current", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := e.fs.Create("/ledgers0/current/0.log")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = e.tryStart()
	if !errors.Is(err, ErrInvalidCookie) || !strings.Contains(err.Error(), "holds data but no cookie") {
		t.Fatalf("start: %v", err)
	}
}

func TestRegistration(t *testing.T) {
	e := newEnv(t, true)
	e.tweak = func(c *Config) { c.MetricsAddr = "127.0.0.1:0" }
	b := e.start()
	zc := e.zkConn()
	data, _, err := zc.Get(t.Context(), "/ledgers/available/"+e.id)
	if err != nil {
		t.Fatal(err)
	}
	var info bkproto.BookieServiceInfoFormat
	if err := proto.Unmarshal(data, &info); err != nil || len(info.Endpoints) != 2 {
		t.Fatalf("registration data %v: %v", &info, err)
	}
	rpc, metrics := info.Endpoints[0], info.Endpoints[1]
	if rpc.GetProtocol() != "bookie-rpc" || rpc.GetHost() != "127.0.0.1" ||
		int(rpc.GetPort()) != b.Addr().(*net.TCPAddr).Port {
		t.Fatalf("rpc endpoint %v, listening on %v", rpc, b.Addr())
	}
	if metrics.GetProtocol() != "http" || int(metrics.GetPort()) != b.MetricsAddr().(*net.TCPAddr).Port {
		t.Fatalf("metrics endpoint %v, listening on %v", metrics, b.MetricsAddr())
	}
	addEntries(t, dial(t, b), 1, 0, 3)
	resp, err := http.Get("http://" + b.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"bookkeeper_server_ADD_ENTRY_REQUEST_count{success=\"true\"} 3",
		"bookie_SERVER_STATUS 1", "bookie_journal_JOURNAL_SYNC_count", "bookie_ledger_writable_dirs 2"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	layout, _, err := zc.Get(t.Context(), "/ledgers/LAYOUT")
	if err != nil || !strings.Contains(string(layout), "HierarchicalLedgerManagerFactory") {
		t.Fatalf("LAYOUT %q %v", layout, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := registeredAs(t, zc, e.id); got != "none" {
		t.Fatalf("after close registered as %s", got)
	}
}

// TestRegistrationWaitsForStaleZnode: a znode left by a crashed bookie's
// session blocks registration until that session ends.
func TestRegistrationWaitsForStaleZnode(t *testing.T) {
	e := newEnv(t, true)
	b := e.start()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	stale := e.zkConn()
	if _, _, err := stale.Create(t.Context(), "/ledgers/available/"+e.id, nil, zkclient.CreateOptions{Flags: zkproto.FlagEphemeral}); err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	var b2 *Bookie
	go func() {
		var err error
		b2, err = e.tryStart()
		started <- err
	}()
	select {
	case err := <-started:
		t.Fatalf("registered over a live session's znode: %v", err)
	default:
	}
	stale.Close() // the "crashed" session ends
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if got := registeredAs(t, e.zkConn(), e.id); got != "writable" {
		t.Fatalf("registered as %s", got)
	}
}
