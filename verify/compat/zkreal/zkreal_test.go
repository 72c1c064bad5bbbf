package zkreal

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// quiet drops go-zookeeper's log lines, which would otherwise outlive the
// test that owns the connection.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

func connect(t *testing.T, s *Server) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{s.Addr()}, 10*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("connect to %s: %v", s.Addr(), err)
	}
	t.Cleanup(conn.Close)
	return conn
}

func TestStartCreateRead(t *testing.T) {
	t.Parallel()
	s := Start(t, Options{})
	t.Logf("startup took %v", s.StartupDuration())
	if s.DataDir() == "" || s.LogPath() == "" {
		t.Errorf("DataDir %q, LogPath %q", s.DataDir(), s.LogPath())
	}
	conn := connect(t, s)
	if _, err := conn.Create("/zkreal", []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}
	data, stat, err := conn.Get("/zkreal")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if string(data) != "hello" || stat.Version != 0 || stat.DataLength != 5 {
		t.Errorf("get = %q, %+v", data, stat)
	}
	srvr, err := s.FourLetter("srvr")
	if err != nil {
		t.Fatalf("srvr: %v", err)
	}
	if !strings.Contains(srvr, "Mode: standalone") {
		t.Errorf("srvr reply lacks Mode: standalone:\n%s", srvr)
	}
	s.Stop()
	s.Stop() // a second Stop is harmless
	if err := probeRead(s.Addr(), time.Second); err == nil {
		t.Error("server still serves after Stop")
	}
}

// TestOptions checks that the options reach the server: TTL nodes need
// extended types, the super digest bypasses ACLs, and the whitelist limits
// four-letter words.
func TestOptions(t *testing.T) {
	t.Parallel()
	sum := sha1.Sum([]byte("super:secret"))
	s := Start(t, Options{
		ExtendedTypes:       true,
		SuperDigest:         "super:" + base64.StdEncoding.EncodeToString(sum[:]),
		FourLetterWhitelist: "ruok",
		TickTime:            500 * time.Millisecond,
		ExtraConfig:         map[string]string{"maxSessionTimeout": "7000"},
	})
	owner := connect(t, s)
	if _, err := owner.CreateTTL("/ttl", nil, zk.FlagTTL, zk.WorldACL(zk.PermAll), time.Hour); err != nil {
		t.Errorf("create TTL node: %v", err)
	}
	if _, err := owner.Create("/secret", []byte("x"), 0, zk.DigestACL(zk.PermAll, "bob", "pw")); err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, _, err := owner.Get("/secret"); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("get without auth = %v, want ErrNoAuth", err)
	}
	super := connect(t, s)
	if err := super.AddAuth("digest", []byte("super:secret")); err != nil {
		t.Fatalf("add auth: %v", err)
	}
	if data, _, err := super.Get("/secret"); err != nil || string(data) != "x" {
		t.Errorf("get as super = %q, %v", data, err)
	}
	if reply, err := s.FourLetter("ruok"); err != nil || reply != "imok" {
		t.Errorf("ruok = %q, %v", reply, err)
	}
	if reply, _ := s.FourLetter("stat"); !strings.Contains(reply, "not in the whitelist") {
		t.Errorf("stat is not whitelisted, but got %q", reply)
	}
	if reply, _ := s.FourLetter("srvr"); !strings.Contains(reply, "Mode: standalone") {
		t.Errorf("srvr is always allowed, but got %q", reply)
	}
}

// recorder is a testing.TB that records Skipf and Fatalf instead of
// stopping the goroutine.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestUnavailable(t *testing.T) {
	missing := errors.New("java not found")
	for _, tt := range []struct {
		env        string
		skip, fail bool
	}{
		{"", true, false},
		{"0", true, false},
		{"1", false, true},
		{"yes", false, true},
	} {
		t.Setenv(RequireEnv, tt.env)
		r := &recorder{TB: t}
		unavailable(r, missing)
		if (r.skipped != "") != tt.skip || (r.failed != "") != tt.fail {
			t.Errorf("%s=%q: skipped %q, failed %q", RequireEnv, tt.env, r.skipped, r.failed)
		}
		if msg := r.skipped + r.failed; !strings.Contains(msg, "java not found") {
			t.Errorf("message %q does not say why", msg)
		}
	}
}

func TestZooCfg(t *testing.T) {
	if err := Available(); err != nil {
		t.Logf("ZooKeeper not available here: %v", err)
	}
	cfg := string(zooCfg("/d", 1234, Options{ExtraConfig: map[string]string{"b": "2", "a": "1"}}))
	if !strings.Contains(cfg, "clientPort=1234\n") || !strings.Contains(cfg, "tickTime=2000\n") ||
		!strings.HasSuffix(cfg, "a=1\nb=2\n") {
		t.Errorf("zoo.cfg:\n%s", cfg)
	}
}
