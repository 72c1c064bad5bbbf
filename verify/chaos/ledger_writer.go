package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ProcWriter is a `keeper ledger write --progress --no-close` process:
// a ledger writer in a process of its own, so that the fronts can tell
// its bookie links from the harness's (Bookies.Own) and so that its
// metadata session is its own. The harness feeds it one entry per line
// and reads back "created <id>" and "acked <entry>" (the acknowledged
// prefix).
type ProcWriter struct {
	Name    string
	LogPath string

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{}
	err    error // final once exited is closed

	created chan int64 // receives the ledger id once
	acked   atomic.Int64

	mu   sync.Mutex
	sent [][]byte
}

// StartProcWriter starts a writer process named node whose metadata links
// go through proxies from node, with extra `ledger write` flags (-E,
// --Qw, --Qa, --add-timeout, ...). The fronts learn its pid.
func (r *LedgerRun) StartProcWriter(node, password string, extra ...string) (*ProcWriter, error) {
	zk, err := r.ZKAddrs(node)
	if err != nil {
		return nil, err
	}
	args := append([]string{"ledger", "write", "--progress", "--no-close", "--zk", strings.Join(zk, ","),
		"--password", password}, extra...)
	if r.Scenario.V2 {
		args = append(args, "--v2")
	}
	w := &ProcWriter{Name: node, exited: make(chan struct{}), created: make(chan int64, 1)}
	w.acked.Store(-1)
	for i := 1; ; i++ {
		w.LogPath = filepath.Join(r.Dir, fmt.Sprintf("%s-%02d.log", node, i))
		if _, err := os.Stat(w.LogPath); err != nil {
			break
		}
	}
	logFile, err := os.Create(w.LogPath)
	if err != nil {
		return nil, err
	}
	w.cmd = exec.Command(r.Bin, args...)
	w.cmd.Stderr = logFile
	w.cmd.SysProcAttr = sysProcAttr()
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		logFile.Close()
		return nil, err
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := w.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	r.Bookies.Own(w.cmd.Process.Pid, node)
	var reading sync.WaitGroup
	reading.Add(1)
	go func() {
		defer reading.Done()
		w.readProgress(stdout, logFile)
	}()
	go func() {
		reading.Wait()
		w.err = w.cmd.Wait()
		logFile.Close()
		r.Bookies.Disown(w.cmd.Process.Pid)
		close(w.exited)
	}()
	return w, nil
}

// readProgress reads the writer's output lines; others go to the log.
func (w *ProcWriter) readProgress(stdout io.Reader, log io.Writer) {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintf(log, "stdout: %s\n", line)
		if v, ok := strings.CutPrefix(line, "created "); ok {
			if id, err := strconv.ParseInt(v, 10, 64); err == nil {
				w.created <- id
			}
		}
		if v, ok := strings.CutPrefix(line, "acked "); ok {
			if id, err := strconv.ParseInt(v, 10, 64); err == nil {
				w.acked.Store(id)
			}
		}
	}
}

// Ledger waits for the id of the ledger the writer created.
func (w *ProcWriter) Ledger(ctx context.Context) (int64, error) {
	select {
	case id := <-w.created:
		w.created <- id
		return id, nil
	case <-w.exited:
		return 0, fmt.Errorf("chaos: %s exited before creating its ledger (%v):\n%s", w.Name, w.err, LogTail(w.LogPath, 20))
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Acked returns the highest entry id acknowledged so far (-1: none).
func (w *ProcWriter) Acked() int64 { return w.acked.Load() }

// Feed writes payload(i) for i = 0, 1, ... as lines, burst at a time
// every interval, until ctx ends or the writer stops reading; every line
// is recorded before it is written. onAck, if set, is called as the
// acknowledged prefix grows.
func (w *ProcWriter) Feed(ctx context.Context, payload func(i int) []byte, burst int, interval time.Duration,
	onAck func()) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	last := int64(-1)
	for i := 0; ; {
		select {
		case <-ctx.Done():
			return
		case <-w.exited:
			return
		case <-tick.C:
		}
		if a := w.Acked(); a > last {
			for ; last < a; last++ {
				if onAck != nil {
					onAck()
				}
			}
		}
		var b []byte
		w.mu.Lock()
		for range burst {
			p := payload(i)
			w.sent = append(w.sent, p)
			b = append(append(b, p...), '\n')
			i++
		}
		w.mu.Unlock()
		if _, err := w.stdin.Write(b); err != nil {
			return
		}
	}
}

// Sent returns the payloads fed so far, in order.
func (w *ProcWriter) Sent() [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([][]byte(nil), w.sent...)
}

// Exited is closed once the process has exited.
func (w *ProcWriter) Exited() <-chan struct{} { return w.exited }

// Wait waits up to timeout for the process to exit and reports whether
// it did.
func (w *ProcWriter) Wait(timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.exited:
		return true
	case <-t.C:
		return false
	}
}

// Kill ends the process with SIGKILL and waits for it.
func (w *ProcWriter) Kill() {
	_ = w.stdin.Close()
	select {
	case <-w.exited:
		return
	default:
	}
	_ = w.cmd.Process.Kill()
	<-w.exited
}

// ExitErr is how the process ended; only meaningful once it has.
func (w *ProcWriter) ExitErr() error {
	select {
	case <-w.exited:
		return w.err
	default:
		return errors.New("still running")
	}
}

// Log returns the writer's log (its stderr and stdout lines).
func (w *ProcWriter) Log() string {
	b, _ := os.ReadFile(w.LogPath)
	return string(b)
}
