package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/internal/keeperbin"
	"keeper/internal/testhost"
	"keeper/internal/vfs"
)

// TestSecondProcessRefusesDataDir runs `keeper sandbox` as a real process
// and, while it runs, every other command that would write into its
// directories: each exits non-zero with the directory and the sandbox's
// pid in its message, and the sandbox goes on serving. A SIGKILL of the
// sandbox leaves its lock file behind, and it blocks nobody: the sandbox
// starts again on the same directory and has its data.
func TestSecondProcessRefusesDataDir(t *testing.T) {
	bin := keeperbin.ForTest(t)
	root := t.TempDir()
	dir := filepath.Join(root, "keeper-data")
	ports := testhost.Ports(t, 5)
	sandboxArgs := func(port, bookiePort int) []string {
		return []string{"sandbox", "--data-dir", dir, "--port", strconv.Itoa(port), "--bookies", "1",
			"--bookie-port", strconv.Itoa(bookiePort), "--admin-port", "0"}
	}
	first := startKeeperProc(t, bin, root, sandboxArgs(ports[0], ports[1])...)
	zkAddr := "127.0.0.1:" + strconv.Itoa(ports[0])
	createNode(t, zkAddr, "/before")

	zooCfg := filepath.Join(root, "zoo.cfg")
	writeTestFile(t, zooCfg, fmt.Sprintf("dataDir=%s\nclientPort=%d\nadmin.enableServer=false\n", dir, ports[2]))
	bookieJournal := filepath.Join(dir, "bookie-1", "journal")
	tests := []struct {
		name string
		args []string
		held string // the directory the message names
	}{
		{"a second sandbox", sandboxArgs(ports[2], ports[3]), dir},
		{"a server on the same dataDir", []string{"server", zooCfg}, dir},
		{"a bookie on a sandbox bookie's journal", []string{"bookie", "--port", strconv.Itoa(ports[4]),
			"--journal-dirs", bookieJournal, "--ledger-dirs", filepath.Join(root, "other-ledgers")}, bookieJournal},
		{"tool purge", []string{"tool", "purge", dir, "-n", "3"}, dir},
		{"tool txnlog truncate --yes", []string{"tool", "txnlog", "truncate", dir, "--zxid", "0x1", "--yes"}, dir},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runKeeperProc(bin, tc.args...)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() <= 0 {
				t.Fatalf("keeper %s: %v, want a non-zero exit\n%s", strings.Join(tc.args, " "), err, out)
			}
			want := fmt.Sprintf("data directory %s is in use by another keeper process (pid %d); stop it first",
				tc.held, first.cmd.Process.Pid)
			if !strings.Contains(out, want) {
				t.Fatalf("keeper %s said:\n%s\nwant %q", strings.Join(tc.args, " "), out, want)
			}
		})
	}
	select {
	case <-first.exited:
		t.Fatalf("the first sandbox stopped: %v\n%s", first.err, first.log(t))
	default:
	}
	createNode(t, zkAddr, "/after") // it still writes its log

	first.kill(t) // SIGKILL: the lock file stays, the lock goes with the process
	if _, err := os.Stat(filepath.Join(dir, vfs.LockFileName)); err != nil {
		t.Fatalf("the killed sandbox's lock file: %v", err)
	}
	again := startKeeperProc(t, bin, root, sandboxArgs(ports[0], ports[1])...)
	c := dialZKAddr(t, zkAddr)
	for _, p := range []string{"/before", "/after"} {
		if ok, _, err := c.Exists(p); err != nil || !ok {
			t.Errorf("%s after the restart: exists %v, err %v", p, ok, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, vfs.LockFileName))
	if err != nil || !strings.Contains(string(b), "pid="+strconv.Itoa(again.cmd.Process.Pid)+"\n") {
		t.Errorf("lock file after the restart: %q (%v), want the new sandbox's pid %d", b, err, again.cmd.Process.Pid)
	}
	again.stop(t)
}

// TestToolsLockToWrite: while a data directory is locked, the tools that
// change its files refuse with vfs.ErrLocked and change nothing; the ones
// that only read run as usual.
func TestToolsLockToWrite(t *testing.T) {
	dir := toolData(t)
	held, err := vfs.LockDirs(vfs.Default, dir) // as a running server holds it
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	before, err := os.ReadDir(filepath.Join(dir, "version-2"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		wantLocked bool
	}{
		{"purge", []string{"purge", dir, "-n", "3"}, true},
		{"txnlog truncate --yes", []string{"txnlog", "truncate", dir, "--zxid", "0x1", "--yes"}, true},
		{"txnlog truncate: only the plan", []string{"txnlog", "truncate", dir, "--zxid", "0x1"}, false},
		{"txnlog verify", []string{"txnlog", "verify", dir}, false},
		{"txnlog dump", []string{"txnlog", "dump", dir}, false},
		{"snapshot verify", []string{"snapshot", "verify", dir}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runTool(t, tc.args...)
			if got := errors.Is(err, vfs.ErrLocked); got != tc.wantLocked {
				t.Fatalf("keeper tool %v: %v (locked %v, want %v)\n%s", tc.args, err, got, tc.wantLocked, out)
			}
		})
	}
	after, err := os.ReadDir(filepath.Join(dir, "version-2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("the locked directory changed: %d entries before, %d after", len(before), len(after))
	}
}

// keeperProc is a long-running keeper process (a sandbox) under test.
type keeperProc struct {
	cmd     *exec.Cmd
	logPath string
	ready   chan struct{} // closed when it says it is running
	exited  chan struct{} // closed when it has exited; err is then set
	err     error
}

// startKeeperProc starts bin with args and waits until it prints that the
// sandbox is running. Its stderr (the logs) goes to a file under dir.
func startKeeperProc(t *testing.T, bin, dir string, args ...string) *keeperProc {
	t.Helper()
	logFile, err := os.CreateTemp(dir, "keeper-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	p := &keeperProc{cmd: exec.Command(bin, args...), logPath: logFile.Name(),
		ready: make(chan struct{}), exited: make(chan struct{})}
	p.cmd.Stderr = logFile
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.kill(t) })
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "keeper sandbox is running") {
				close(p.ready)
			}
		}
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	select {
	case <-p.ready:
	case <-p.exited:
		t.Fatalf("keeper %s exited: %v\n%s", strings.Join(args, " "), p.err, p.log(t))
	case <-time.After(60 * time.Second):
		t.Fatalf("keeper %s: not running after 60s\n%s", strings.Join(args, " "), p.log(t))
	}
	return p
}

// log returns what the process logged.
func (p *keeperProc) log(t *testing.T) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		t.Errorf("read %s: %v", p.logPath, err)
	}
	return string(b)
}

// kill sends SIGKILL, if the process still runs, and waits for its exit.
func (p *keeperProc) kill(t *testing.T) {
	select {
	case <-p.exited:
		return
	default:
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("kill: %v", err)
	}
	<-p.exited
}

// stop interrupts the process (Ctrl-C) and checks that it exits cleanly.
func (p *keeperProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("no exit 60s after SIGINT\n%s", p.log(t))
	}
	if p.err != nil {
		t.Fatalf("exit after SIGINT: %v\n%s", p.err, p.log(t))
	}
}

// runKeeperProc runs bin with args to its end (at most 60s: a command
// that does not refuse would serve until killed) and returns its output.
func runKeeperProc(bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(out), err
}

func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dialZKAddr opens a session on addr, closed at the end of the test.
func dialZKAddr(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietZKLogger{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// createNode creates a persistent node at path through a session of its
// own, and fails the test if the create does not succeed.
func createNode(t *testing.T, addr, path string) {
	t.Helper()
	c := dialZKAddr(t, addr)
	if _, err := c.Create(path, []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	c.Close()
}
