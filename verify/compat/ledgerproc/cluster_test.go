package ledgerproc

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"keeper/coordination/zkclient"
	"keeper/internal/testhost"
	"keeper/ledgerstore/ledgerclient"
)

// startTimeout bounds the start of one process: on a busy machine a
// bookie's first journal preallocation alone can take seconds.
var startTimeout = testhost.Scale(60 * time.Second)

// proc is one keeper process; its stdout and stderr go to a log file
// unless the caller takes them.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{} // closed once the process has been reaped
	once    sync.Once
	err     error // the exit status; final once exited is closed
}

// startProc starts keeper with args. If cmd's Stdout is already set (the
// caller reads it), only stderr goes to the log file.
func startProc(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, logPath: filepath.Join(t.TempDir(), name+".log"), exited: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Stdout == nil {
		cmd.Stdout = logFile
	}
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	t.Cleanup(p.kill)
	return p
}

// keeperCmd returns an unstarted `keeper args...`.
func keeperCmd(args ...string) *exec.Cmd { return exec.Command(keeperBin, args...) }

// kill sends SIGKILL and waits for the process to be reaped.
func (p *proc) kill() {
	p.once.Do(func() { _ = p.cmd.Process.Kill() })
	<-p.exited
}

// signal sends sig (SIGSTOP, SIGCONT) to the process.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: signal %v: %v", p.name, sig, err)
	}
}

// wait waits for the process to exit on its own and returns its status.
func (p *proc) wait(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %v:\n%s", p.name, timeout, p.logTail())
		return nil
	}
}

func (p *proc) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// cluster is a metadata server and bookies, each a process of its own.
type cluster struct {
	zkAddr  string
	zk      *zkclient.Session
	bookies []*bookieProc
}

// bookieProc is one `keeper bookie` process.
type bookieProc struct {
	*proc
	id string // its bookie id: 127.0.0.1:port
}

// startCluster starts `keeper server` and n `keeper bookie` processes,
// each registered when it returns.
func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	c := &cluster{}
	c.zkAddr = startServer(t)
	c.zk = connectZK(t, c.zkAddr)
	for i := range n {
		c.bookies = append(c.bookies, c.startBookie(t, i))
	}
	return c
}

// startServer starts `keeper server` on a port of its own (testhost) and
// returns its address once it answers ruok. Sessions may be as short as
// 400 ms, so a killed bookie's registration goes soon.
func startServer(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	port := testhost.Port(t)
	cfg := fmt.Sprintf("tickTime=200\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
		"maxClientCnxns=0\n4lw.commands.whitelist=*\nadmin.enableServer=false\n", filepath.Join(root, "data"), port)
	cfgPath := filepath.Join(root, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, "server", keeperCmd("server", cfgPath))
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := waitServing(p, addr); err != nil {
		t.Fatalf("keeper server did not start: %v", err)
	}
	return addr
}

// waitServing polls ruok until the server answers.
func waitServing(p *proc, addr string) error {
	deadline := time.Now().Add(startTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if reply, err := fourLetter(addr, "ruok"); err == nil && reply == "imok" {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("keeper server exited:\n%s", p.logTail())
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer on %s within %v:\n%s", addr, startTimeout, p.logTail())
		}
	}
}

// fourLetter sends a four-letter word and reads the reply.
func fourLetter(addr, word string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// connectZK opens the test's own session, to watch the bookies register.
func connectZK(t *testing.T, addr string) *zkclient.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := zkclient.OpenSession(ctx, []string{addr}, zkclient.SessionOptions{
		Options: zkclient.Options{SessionTimeout: 10 * time.Second}})
	if err != nil {
		t.Fatalf("no session with %s within %v: %v", addr, startTimeout, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// startBookie starts bookie i on a port of its own (testhost) and waits
// until it has registered.
func (c *cluster) startBookie(t *testing.T, i int) *bookieProc {
	t.Helper()
	dir := t.TempDir()
	port := testhost.Port(t)
	cmd := keeperCmd("bookie", "--port", strconv.Itoa(port), "--listen-host", "127.0.0.1",
		"--advertised-address", "127.0.0.1", "--zk-servers", c.zkAddr, "--log-level", "warn",
		"--journal-dirs", filepath.Join(dir, "journal"), "--ledger-dirs", filepath.Join(dir, "ledgers"))
	b := &bookieProc{proc: startProc(t, fmt.Sprintf("bookie-%d", i), cmd),
		id: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	if err := c.waitRegistered(b); err != nil {
		t.Fatalf("bookie %d did not start: %v", i, err)
	}
	return b
}

// waitRegistered waits until the bookie's writable registration exists.
// A bookie registers only once it serves.
func (c *cluster) waitRegistered(b *bookieProc) error {
	path := "/ledgers/available/" + b.id
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		_, ok, ch, err := c.zk.ExistsW(ctx, path)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-b.exited:
			return fmt.Errorf("bookie exited before registering:\n%s", b.logTail())
		case <-deadline.C:
			return fmt.Errorf("bookie did not register within %v:\n%s", startTimeout, b.logTail())
		}
	}
}

// bookie returns the bookie process with the given id.
func (c *cluster) bookie(t *testing.T, id string) *bookieProc {
	t.Helper()
	for _, b := range c.bookies {
		if b.id == id {
			return b
		}
	}
	t.Fatalf("no bookie %s in the cluster", id)
	return nil
}

// client connects a ledger client to the cluster; it closes when the test
// ends.
func (c *cluster) client(t *testing.T) *ledgerclient.Client {
	t.Helper()
	// A killed bookie's connections fail at once (the kernel closes
	// them), so the tests need no add timeout to notice it; a short one
	// only let a live bookie that was slow on a busy machine be replaced
	// too, leaving no spare (TestBookieKillUnderLoad, E=3 of 4 bookies).
	cl, err := ledgerclient.New(ledgerclient.Config{ZKServers: []string{c.zkAddr},
		Logger: slog.New(slog.DiscardHandler), AddTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// testContext is a context that ends with the test or after timeout.
func testContext(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}
