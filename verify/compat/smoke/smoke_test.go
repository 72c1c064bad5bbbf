package smoke

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"keeper/coordination/server"
	"keeper/coordination/zkcore"
	"keeper/verify/compat/zkreal"
)

var update = flag.Bool("update", false, "rewrite the golden files from this run's output")

// Where the real clients live (Debian's zookeeper, zookeeper-bin and
// python3-kazoo packages). kazoo is installed for the system Python, not
// for whatever python3 comes first on PATH.
const (
	zkCliPath  = "/usr/share/zookeeper/bin/zkCli.sh"
	cliMtPath  = "/usr/lib/zookeeper/bin/cli_mt"
	pythonPath = "/usr/bin/python3"
)

// clientTimeout bounds one client process; they normally take a second or
// two (the JVM's start-up dominates).
const clientTimeout = 2 * time.Minute

// startKeeper runs an in-process keeper server for the test.
func startKeeper(t *testing.T) string {
	t.Helper()
	cfg := server.Config{
		ClientAddr:          "127.0.0.1:0",
		Core:                zkcore.DefaultConfig(),
		FourLetterWhitelist: []string{"*"},
	}
	cfg.Core.ExtendedTypes = true
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr().String()
}

// requireClient skips the test when a client is missing, or fails it when
// KEEPER_REQUIRE_ZK is set (as verify/compat/zkreal does for the server).
func requireClient(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if v := os.Getenv(zkreal.RequireEnv); v != "" && v != "0" {
		t.Fatalf("%s is required (%s=%s): %v", what, zkreal.RequireEnv, v, err)
	}
	t.Skipf("%s not available: %v", what, err)
}

// executable reports an error unless path is an executable file.
func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", path)
	}
	return nil
}

// run runs a client to completion and returns its combined output. Both
// streams go to one pipe, so lines keep the order the client wrote them in.
func run(t *testing.T, stdin io.Reader, env []string, name string, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = stdin
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.Bytes(), fmt.Errorf("%s timed out after %v", name, clientTimeout)
	}
	return out.Bytes(), err
}

// normalizer masks what differs between runs and servers but keeps what a
// client may rely on: equal zxids stay equal (Z1, Z2, ... by first
// appearance), and so do session ids.
type normalizer struct {
	names map[string]string
	count map[string]int
}

func newNormalizer() *normalizer {
	return &normalizer{names: make(map[string]string), count: make(map[string]int)}
}

// name returns the stable name of value in class (Z for zxids, S for
// sessions).
func (n *normalizer) name(class, value string) string {
	key := class + value
	if v, ok := n.names[key]; ok {
		return v
	}
	n.count[class]++
	v := fmt.Sprintf("%s%d", class, n.count[class])
	n.names[key] = v
	return v
}

var (
	zkCliZxid  = regexp.MustCompile(`^([cmp]Zxid) = 0x([0-9a-f]+)$`)
	zkCliTime  = regexp.MustCompile(`^([cm]time) = .*$`)
	zkCliOwner = regexp.MustCompile(`^ephemeralOwner = 0x([0-9a-f]+)$`)
	cliMtZxid  = regexp.MustCompile(`^\t([cm]zxid)=([0-9a-f]+)$`)
	cliMtTime  = regexp.MustCompile(`^(\t)?([cm]time) ?= ?.*$`)
	cliMtLog   = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
)

// normalizeZkCli turns zkCli.sh output into its golden form. Watch events
// are printed by the client's event thread, at no fixed place among the
// command output, so they are collected into a list of their own.
func normalizeZkCli(out []byte) (lines, events []string) {
	n := newNormalizer()
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case line == "", strings.HasPrefix(line, "SLF4J:"), line == "WATCHER::",
			strings.HasPrefix(line, "JLine support is"):
			continue
		case line == "WatchedEvent state:Closed type:None path:null":
			// The event thread prints the session's close as quit
			// ends the JVM, which may exit first: whether the line
			// appears is a race inside zkCli, seen against both
			// servers on a busy machine.
			continue
		case strings.HasPrefix(line, "WatchedEvent "):
			events = append(events, line)
			continue
		case strings.HasPrefix(line, "Connecting to "):
			line = "Connecting to SERVER"
		}
		if m := zkCliZxid.FindStringSubmatch(line); m != nil {
			line = m[1] + " = " + n.name("Z", m[2])
		} else if m := zkCliTime.FindStringSubmatch(line); m != nil {
			line = m[1] + " = TIME"
		} else if m := zkCliOwner.FindStringSubmatch(line); m != nil && m[1] != "0" {
			line = "ephemeralOwner = " + n.name("S", m[1])
		}
		lines = append(lines, line)
	}
	return lines, events
}

// normalizeCliMt turns the output of one cli_mt command into its golden
// form. Per-session noise (session ids, timings, client logs) goes, and
// child lists, which the server may return in any order, are sorted.
func normalizeCliMt(n *normalizer, out []byte) []string {
	var lines []string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		switch {
		case cliMtLog.MatchString(line), strings.HasPrefix(line, "Got a new session id:"),
			strings.HasPrefix(line, "Watcher SESSION_EVENT"), strings.HasPrefix(line, "time = "):
			continue
		}
		if m := cliMtZxid.FindStringSubmatch(line); m != nil {
			line = "\t" + m[1] + "=" + n.name("Z", m[2])
		} else if m := cliMtTime.FindStringSubmatch(line); m != nil {
			line = m[1] + m[2] + " = TIME"
		}
		lines = append(lines, line)
	}
	sortChildRuns(lines)
	return lines
}

// sortChildRuns sorts each run of child-name lines (tab-indented, with no
// '=' as stat lines have) in place.
func sortChildRuns(lines []string) {
	isChild := func(s string) bool { return strings.HasPrefix(s, "\t") && !strings.Contains(s, "=") }
	for i := 0; i < len(lines); {
		if !isChild(lines[i]) {
			i++
			continue
		}
		j := i
		for j < len(lines) && isChild(lines[j]) {
			j++
		}
		slices.Sort(lines[i:j])
		i = j
	}
}

// checkGolden compares got with testdata/name. With -update, the run
// against Apache ZooKeeper rewrites the file instead.
func checkGolden(t *testing.T, name string, got []string, reference bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	text := strings.Join(got, "\n") + "\n"
	if *update && reference {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if slices.Equal(got, want) {
		return
	}
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Fatalf("%s differs from line %d:\n got %q\nwant %q\nwhole output:\n%s", path, i+1, g, w, text)
		}
	}
}

// TestClients runs every client against Apache ZooKeeper (which checks
// the golden files themselves) and against keeper. With -update only the
// ZooKeeper run happens, and it rewrites the golden files.
func TestClients(t *testing.T) {
	t.Run("zookeeper", func(t *testing.T) {
		t.Parallel()
		zk := zkreal.Start(t, zkreal.Options{ExtendedTypes: true})
		runClients(t, zk.Addr(), true)
	})
	if *update {
		return
	}
	t.Run("keeper", func(t *testing.T) {
		t.Parallel()
		runClients(t, startKeeper(t), false)
	})
}

// runClients runs the three clients in parallel. Each works under its own
// root, so they can share the server.
func runClients(t *testing.T, addr string, reference bool) {
	for name, fn := range map[string]func(*testing.T, string, bool){
		"zkCli": testZkCli, "cli_mt": testCliMt, "kazoo": testKazoo,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, addr, reference)
		})
	}
}

func testZkCli(t *testing.T, addr string, reference bool) {
	requireClient(t, "zkCli.sh", executable(zkCliPath))
	_, err := exec.LookPath("java")
	requireClient(t, "java", err)
	script, err := os.Open(filepath.Join("testdata", "zkcli.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer script.Close()
	out, err := run(t, script, []string{"ZOO_LOG_DIR=" + t.TempDir()}, zkCliPath, "-server", addr)
	// zkCli exits with the status of the last command before quit, which
	// the golden file records.
	exit := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		exit = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("zkCli.sh: %v\n%s", err, out)
	}
	lines, events := normalizeZkCli(out)
	lines = append(lines, fmt.Sprintf("--- exit status %d", exit), "--- watch events ---")
	checkGolden(t, "zkcli.golden", append(lines, events...), reference)
}

func testCliMt(t *testing.T, addr string, reference bool) {
	requireClient(t, "cli_mt", executable(cliMtPath))
	raw, err := os.ReadFile(filepath.Join("testdata", "cli_mt.txt"))
	if err != nil {
		t.Fatal(err)
	}
	n := newNormalizer()
	var got []string
	for _, cmd := range strings.Split(string(raw), "\n") {
		if cmd = strings.TrimSpace(cmd); cmd == "" || strings.HasPrefix(cmd, "#") {
			continue
		}
		// Batch mode runs one command on a new session, then closes it.
		out, err := run(t, nil, nil, cliMtPath, "-h", addr, "-c", cmd)
		if err != nil {
			t.Fatalf("cli_mt -c %q: %v\n%s", cmd, err, out)
		}
		if !bytes.Contains(out, []byte("Watcher SESSION_EVENT state = CONNECTED_STATE")) {
			t.Errorf("cli_mt -c %q never connected:\n%s", cmd, out)
		}
		got = append(got, "$ "+cmd)
		got = append(got, normalizeCliMt(n, out)...)
	}
	checkGolden(t, "cli_mt.golden", got, reference)
}

func testKazoo(t *testing.T, addr string, reference bool) {
	requireClient(t, pythonPath, executable(pythonPath))
	_, err := run(t, nil, nil, pythonPath, "-c", "import kazoo.client")
	requireClient(t, "kazoo for "+pythonPath, err)
	// --check-version calls kazoo's server_version(), which reads the
	// envi four-letter word.
	out, err := run(t, nil, nil, pythonPath, filepath.Join("testdata", "kazoo_smoke.py"), addr, "--check-version")
	if err != nil {
		t.Fatalf("kazoo_smoke.py: %v\n%s", err, out)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if strings.HasPrefix(line, "ok ") {
			got = append(got, line)
		}
	}
	checkGolden(t, "kazoo.golden", got, reference)
}
