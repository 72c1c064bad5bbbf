package mixed

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// pythonPath is the Python that Debian's python3-kazoo is installed for.
const pythonPath = "/usr/bin/python3"

// kazooWriter is testdata/kazoo_writer.py running against the ensemble:
// a second, independent client library writing through the migration.
type kazooWriter struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}

	mu      sync.Mutex
	started bool
	acked   []string
	unknown int
	odd     []string // lines that must not appear
}

// startKazooWriter starts the kazoo writer on every member's address, or
// skips the test without kazoo (fails it with KEEPER_REQUIRE_ZK).
func startKazooWriter(t *testing.T, e *Ensemble, prefix string) *kazooWriter {
	t.Helper()
	if err := exec.Command(pythonPath, "-c", "import kazoo.client").Run(); err != nil {
		if os.Getenv("KEEPER_REQUIRE_ZK") != "" {
			t.Fatalf("kazoo for %s: %v", pythonPath, err)
		}
		t.Skipf("kazoo for %s: %v", pythonPath, err)
	}
	var addrs []string
	for _, m := range e.Members {
		addrs = append(addrs, m.Addr)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "kazoo_writer.py"))
	if err != nil {
		t.Fatal(err)
	}
	k := &kazooWriter{cmd: exec.Command(pythonPath, script, strings.Join(addrs, ","), prefix), done: make(chan struct{})}
	k.cmd.Stderr = os.Stderr
	out, err := k.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if k.stdin, err = k.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.cmd.Process.Kill(); <-k.done })
	go func() {
		defer close(k.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			verb, path, _ := strings.Cut(sc.Text(), " ")
			k.mu.Lock()
			switch verb {
			case "started":
				k.started = true
			case "acked":
				k.acked = append(k.acked, path)
			case "unknown":
				k.unknown++
			case "stopped":
			default:
				k.odd = append(k.odd, sc.Text())
			}
			k.mu.Unlock()
		}
		_ = k.cmd.Wait()
	}()
	e.waitFor(startTimeout, "the kazoo writer's session", func() (bool, string) {
		select {
		case <-k.done:
			t.Fatalf("the kazoo writer exited before its session started: %v", k.cmd.ProcessState)
		default:
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		return k.started, "not started"
	})
	return k
}

// finish stops the writer (it closes its session) and returns what it
// saw; lines it must not print fail the test.
func (k *kazooWriter) finish(t *testing.T) (acked []string, unknown int) {
	t.Helper()
	_ = k.stdin.Close()
	select {
	case <-k.done:
	case <-time.After(startTimeout):
		t.Fatalf("the kazoo writer did not stop within %v", startTimeout)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.odd) > 0 {
		t.Fatalf("the kazoo writer printed: %q", k.odd)
	}
	return k.acked, k.unknown
}
