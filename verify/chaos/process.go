package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"keeper/internal/keeperbin"
)

// BuildKeeper builds the module's cmd/keeper into dir, with the chaos
// build tag (which lets the harness inject disk faults through
// KEEPER_FAULTS_FILE; nothing else differs), and returns the binary's
// path. moduleDir is the module root; "" finds it with `go env GOMOD` from
// the working directory (a test's package directory).
func BuildKeeper(dir, moduleDir string) (string, error) {
	return keeperbin.Build(dir, moduleDir, "chaos")
}

// Process is one run of a child process (`keeper server`, `keeper
// bookie`): its output goes to a log file, and it dies with the harness.
type Process struct {
	cmd     *exec.Cmd
	LogPath string
	exited  chan struct{}

	mu      sync.Mutex
	paused  bool
	waitErr error
}

// StartProcess starts bin with args, appending its output to logPath;
// env ("KEY=value") is added to the harness's environment.
func StartProcess(bin string, args []string, logPath string, env ...string) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p := &Process{LogPath: logPath, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	if len(env) > 0 {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = sysProcAttr()
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("chaos: start %s: %w", bin, err)
	}
	go func() {
		err := p.cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

// Running reports whether the process has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Exited is closed once the process has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitErr is how the process ended (nil while it runs or after exit 0).
func (p *Process) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Kill sends SIGKILL and waits until the process is reaped. A paused
// process dies too.
func (p *Process) Kill() {
	if p.Running() {
		_ = p.cmd.Process.Kill()
	}
	<-p.exited
}

// Stop sends SIGTERM and waits up to timeout for the exit; then it kills
// the process and reports that it had to.
func (p *Process) Stop(timeout time.Duration) error {
	if !p.Running() {
		return nil
	}
	p.Resume()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.exited:
		return nil
	case <-timer.C:
		p.Kill()
		return fmt.Errorf("chaos: pid %d ignored SIGTERM for %v; killed it", p.Pid(), timeout)
	}
}

// ReloadFaults sends SIGUSR1, on which a chaos build of keeper reloads its
// fault file.
func (p *Process) ReloadFaults() error { return p.cmd.Process.Signal(syscall.SIGUSR1) }

// Pause sends SIGSTOP: the process keeps its sockets but runs no code.
func (p *Process) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused && p.Running() {
		_ = p.cmd.Process.Signal(syscall.SIGSTOP)
		p.paused = true
	}
}

// Resume sends SIGCONT after Pause.
func (p *Process) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		p.paused = false
	}
}

// Paused reports whether Pause is in force.
func (p *Process) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// LogTail returns the last n lines of a log file.
func LogTail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
