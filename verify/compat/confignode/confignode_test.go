package confignode

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/server"
	"keeper/coordination/zoocfg"
	"keeper/internal/testhost"
	"keeper/verify/compat/zkreal"
)

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// node is what a client sees of /zookeeper/config.
type node struct {
	data string
	stat zk.Stat // Mtime zeroed: it is the wall clock of the start
	acl  string
}

func readNode(t *testing.T, addr string) node {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	data, st, err := c.Get("/zookeeper/config")
	if err != nil {
		t.Fatalf("%s: get /zookeeper/config: %v", addr, err)
	}
	acl, _, err := c.GetACL("/zookeeper/config")
	if err != nil {
		t.Fatalf("%s: getACL /zookeeper/config: %v", addr, err)
	}
	if st.Version == -1 && st.Mtime == 0 {
		t.Errorf("%s: a configuration written at start has mtime 0", addr)
	}
	st.Mtime = 0
	return node{data: string(data), stat: *st, acl: fmt.Sprint(acl)}
}

// startKeeper runs an in-process keeper from the zoo.cfg at path, as
// keeper server reads it (zoocfg.Load), with myid 1.
func startKeeper(t *testing.T, path string) string {
	t.Helper()
	zc, _, err := zoocfg.Load(path, os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	zc.MyID = 1
	if err := zc.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg := server.ConfigFromZoo(zc, slog.New(slog.DiscardHandler))
	cfg.AdminAddr = ""
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	addr := s.Addr().String()
	// A member of an ensemble serves once it leads: poll until a read works.
	deadline := time.Now().Add(testhost.Scale(60 * time.Second))
	for {
		c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
		if err == nil {
			_, err = c.Sync("/")
			c.Close()
		}
		if err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("keeper on %s does not serve: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond) // the poll interval, not a wait for a condition
	}
}

// keeperCfg writes a zoo.cfg for keeper with ZooKeeper's keys and lines,
// on keeper's own client port and data directory.
func keeperCfg(t *testing.T, clientPort int, lines []string) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\nadmin.enableServer=false\n", dir, clientPort)
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	path := dir + "/zoo.cfg"
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStandalone(t *testing.T) {
	t.Parallel()
	real := readNode(t, zkreal.Start(t, zkreal.Options{}).Addr())
	keeper := readNode(t, startKeeper(t, keeperCfg(t, testhost.Port(t), nil)))
	if keeper != real {
		t.Errorf("keeper:    %+v\nZooKeeper: %+v", keeper, real)
	}
}

// TestQuorumOfOne starts ZooKeeper as the one participant of an ensemble
// (standaloneEnabled=false) that lists observers, with ids in an order
// ZooKeeper's hash maps shuffle, client addresses of every form and IPv6
// hosts; the observers need not run. zoocfg must render ZooKeeper's own
// zoo.cfg into the very bytes ZooKeeper stored, and the stat must be the
// one keeper's members give the node. Then ZooKeeper stops and keeper runs
// from the same zoo.cfg (its own data directory): as the one participant
// it elects itself, serves, and shows the same node.
func TestQuorumOfOne(t *testing.T) {
	t.Parallel()
	extra := map[string]string{
		"initLimit": "10", "syncLimit": "5", "standaloneEnabled": "false",
		"server.1":   fmt.Sprintf("127.0.0.1:%d:%d", testhost.Port(t), testhost.Port(t)),
		"server.33":  "[::1]:33001:33002:observer;[::1]:33000",
		"server.17":  "localhost:17001:17002:observer;17000",
		"server.100": "127.0.0.1:10001:10002:OBSERVER;127.0.0.1:10000",
	}
	zks := zkreal.Start(t, zkreal.Options{QuorumPeer: true, ExtraConfig: extra})
	real := readNode(t, zks.Addr())
	zc, _, err := zoocfg.Load(zks.ConfigPath(), os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	zc.MyID = 1
	if err := zc.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := string(zc.ConfigData()); got != real.data {
		t.Errorf("zoocfg renders ZooKeeper's zoo.cfg as\n%q\nZooKeeper stored\n%q", got, real.data)
	}
	want := node{data: real.data, stat: zk.Stat{Version: -1, Aversion: -1, DataLength: int32(len(real.data))},
		acl: fmt.Sprint(zk.WorldACL(zk.PermRead))}
	if real != want {
		t.Errorf("ZooKeeper: %+v\nwant       %+v", real, want)
	}
	t.Logf("/zookeeper/config:\n%s", real.data)

	zks.Stop()
	cfg, err := os.ReadFile(zks.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(cfg), "\n") {
		if strings.HasPrefix(l, "dataDir=") || strings.HasPrefix(l, "dataLogDir=") {
			continue
		}
		lines = append(lines, l)
	}
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/myid", []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lines = append(lines, "dataDir="+dir, "admin.enableServer=false")
	path := dir + "/zoo.cfg"
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keeper := readNode(t, startKeeper(t, path))
	if keeper != real {
		t.Errorf("keeper:    %+v\nZooKeeper: %+v", keeper, real)
	}
}
