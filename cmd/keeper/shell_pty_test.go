package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"keeper/internal/keeperbin"
	"keeper/internal/testhost"
)

// openPTY returns a new pseudo-terminal's controlling side and the
// terminal side a child process gets as its stdin, stdout and stderr.
func openPTY(t *testing.T) (control, term *os.File) {
	t.Helper()
	control, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { control.Close() })
	fd := int(control.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	term, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { term.Close() })
	if err := unix.IoctlSetWinsize(int(term.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 160}); err != nil {
		t.Fatal(err)
	}
	return control, term
}

// ptySession is a keeper shell process on a pseudo-terminal, driven as a
// person at the keyboard would.
type ptySession struct {
	t       *testing.T
	cmd     *exec.Cmd
	control *os.File
	mu      sync.Mutex
	screen  bytes.Buffer // everything the process wrote, escape sequences removed
	done    chan struct{}
	exited  chan struct{} // closed once cmd.Wait returned; waitErr is then set
	waitErr error
	typed   []typedKeys // for the transcript
}

// typedKeys are keys sent while the terminal's last line was row.
type typedKeys struct {
	row  int
	keys string
}

// ansi matches the terminal control sequences the line editor writes.
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]`)

func startPTYShell(t *testing.T, bin string, args ...string) *ptySession {
	t.Helper()
	control, term := openPTY(t)
	p := &ptySession{t: t, cmd: exec.Command(bin, append([]string{"shell"}, args...)...), control: control,
		done: make(chan struct{}), exited: make(chan struct{})}
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = term, term, term
	p.cmd.Env = append(os.Environ(), "TERM=xterm")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	term.Close() // the child has it
	// One goroutine waits for the process; wait and the cleanup read its
	// result, so cmd.Wait is never called twice at once.
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := control.Read(buf)
			p.mu.Lock()
			p.screen.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return p
}

// text is what the process wrote so far, without escape sequences.
func (p *ptySession) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return ansi.ReplaceAllString(p.screen.String(), "")
}

// expect waits until what the process wrote contains want n times.
func (p *ptySession) expect(want string, n int) {
	p.t.Helper()
	deadline := time.Now().Add(testhost.Scale(30 * time.Second))
	for strings.Count(p.text(), want) < n {
		if time.Now().After(deadline) {
			p.t.Fatalf("waited for %d× %q; the terminal shows:\n%s", n, want, p.text())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// typeKeys sends keys as typed; the caller then expects what they cause.
func (p *ptySession) typeKeys(keys string) {
	p.t.Helper()
	p.typed = append(p.typed, typedKeys{row: strings.Count(p.rendered(), "\n"), keys: keys})
	if _, err := p.control.Write([]byte(keys)); err != nil {
		p.t.Fatal(err)
	}
}

// wait waits for the process to exit and returns its exit status.
func (p *ptySession) wait() int {
	p.t.Helper()
	select {
	case <-p.exited:
		err := p.waitErr
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		} else if err != nil {
			p.t.Fatal(err)
		}
		return 0
	case <-time.After(testhost.Scale(30 * time.Second)):
		p.t.Fatalf("the shell did not exit; the terminal shows:\n%s", p.text())
	}
	return -1
}

const (
	keyUp    = "\x1b[A"
	keyLeft  = "\x1b[D"
	keyBack  = "\x7f"
	keyTab   = "\t"
	keyEnter = "\r"
)

// TestShellTerminal drives `keeper shell` on a pseudo-terminal: cursor
// editing, history recalled with the arrow keys and kept across sessions,
// Tab completion of commands and znode paths, and the numbered history.
func TestShellTerminal(t *testing.T) {
	bin := keeperbin.ForTest(t)
	addr := startShellServer(t)
	hist := filepath.Join(t.TempDir(), "history")
	p := startPTYShell(t, bin, "--server", addr, "--history-file", hist)
	p.expect("[zk: "+addr+"(CONNECTED) 0]", 1)

	p.typeKeys("create /c1 one" + keyEnter)
	p.expect("Created /c1", 1)
	p.expect("(CONNECTED) 1]", 1)
	// Type "get /c21", move left over the 1, delete the 2: "get /c1".
	p.typeKeys("get /c21" + keyLeft + keyBack + keyEnter)
	p.expect("one\r\n", 1)
	p.expect("(CONNECTED) 2]", 1)
	if strings.Contains(p.text(), "Invalid path") {
		t.Fatalf("editing keys reached the command:\n%s", p.text())
	}
	// Up recalls the last line.
	p.typeKeys(keyUp + keyEnter)
	p.expect("one\r\n", 2)
	p.expect("(CONNECTED) 3]", 1)
	// Tab completes a znode path, then a command name.
	p.typeKeys("ls /zoo" + keyTab + keyEnter)
	p.expect("[config, quota]", 1)
	p.expect("(CONNECTED) 4]", 1)
	p.typeKeys("getAllChildren" + keyTab + "/c1" + keyEnter)
	p.expect("(CONNECTED) 5]", 1)
	p.typeKeys("history" + keyEnter)
	for _, want := range []string{"0 - create /c1 one", "1 - get /c1", "2 - get /c1", "3 - ls /zookeeper",
		"4 - getAllChildrenNumber /c1", "5 - history"} {
		p.expect(want, 1)
	}
	p.expect("(CONNECTED) 6]", 1)
	// redo runs a numbered line again, as the next command.
	p.typeKeys("redo 1" + keyEnter)
	p.expect("one\r\n", 3)
	p.expect("(CONNECTED) 7]", 1)
	p.typeKeys("addauth digest u:secret" + keyEnter)
	p.expect("(CONNECTED) 8]", 1)
	p.typeKeys("quit" + keyEnter)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d; the terminal shows:\n%s", code, p.text())
	}
	// go test -v prints the session as the terminal showed it.
	t.Logf("terminal transcript:\n%s", p.transcript())

	// The history file keeps what was typed, except credentials.
	data, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	if want := "create /c1 one\nget /c1\nls /zookeeper\ngetAllChildrenNumber /c1\nhistory\nredo 1\nquit\n"; string(data) != want {
		t.Fatalf("history file %q, want %q", data, want)
	}
	if st, err := os.Stat(hist); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("history file mode %v (%v), want 0600", st.Mode(), err)
	}

	// A new session recalls the last one's lines.
	p = startPTYShell(t, bin, "--server", addr, "--history-file", hist)
	p.expect("(CONNECTED) 0]", 1)
	p.typeKeys(keyUp + keyUp + keyUp + keyEnter)
	p.expect("0 - history", 1)
	// Ctrl-D only once the editor reads keys again: typed while the command
	// runs, the terminal (not yet in raw mode) would swallow it.
	p.expect("(CONNECTED) 1]", 1)
	p.typeKeys("\x04") // Ctrl-D on an empty line leaves
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d after Ctrl-D", code)
	}
	t.Logf("terminal transcript of the second session:\n%s", p.transcript())
}

// csi matches one control sequence: its parameters and its final letter.
var csi = regexp.MustCompile(`^\x1b\[([0-9;?]*)([A-Za-z])`)

// rendered is what the process wrote as a terminal would leave it on the
// screen: carriage returns, backspaces, cursor moves and erasures applied,
// so a line the editor redrew while keys were typed shows once, as last
// drawn. Other control sequences are dropped.
func (p *ptySession) rendered() string {
	p.mu.Lock()
	raw := p.screen.String()
	p.mu.Unlock()
	lines := [][]rune{nil}
	row, col := 0, 0
	put := func(r rune) {
		l := lines[row]
		for len(l) < col {
			l = append(l, ' ')
		}
		if col < len(l) {
			l[col] = r
		} else {
			l = append(l, r)
		}
		lines[row] = l
		col++
	}
	for i := 0; i < len(raw); {
		if m := csi.FindStringSubmatch(raw[i:]); m != nil {
			n, err := strconv.Atoi(m[1])
			if err != nil || n < 1 {
				n = 1
			}
			switch m[2] {
			case "D":
				col = max(col-n, 0)
			case "C":
				col += n
			case "A":
				row = max(row-n, 0)
			case "K", "J":
				if m[1] == "2" { // the whole line
					lines[row] = nil
				} else if col < len(lines[row]) {
					lines[row] = lines[row][:col]
				}
				if m[2] == "J" {
					lines = lines[:row+1]
				}
			}
			i += len(m[0])
			continue
		}
		r, size := []rune(raw[i:])[0], len(string([]rune(raw[i:])[0]))
		i += size
		switch {
		case r == '\r':
			col = 0
		case r == '\n':
			row++
			if row == len(lines) {
				lines = append(lines, nil)
			}
		case r == '\b':
			col = max(col-1, 0)
		case r == 0x1b || r < ' ':
			// another escape or a bell: nothing on the screen
		default:
			put(r)
		}
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(strings.TrimRight(string(l), " "))
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

// keyNames spells the keys the tests send that print nothing themselves.
var keyNames = strings.NewReplacer(keyUp, "<Up>", keyLeft, "<Left>", keyBack, "<Backspace>", keyTab, "<Tab>",
	keyEnter, "<Enter>", "\x04", "<Ctrl-D>")

// transcript is the rendered screen with, after each line the keys were
// typed on, the keys as pressed.
func (p *ptySession) transcript() string {
	lines := strings.Split(p.rendered(), "\n")
	var b strings.Builder
	next := 0
	for i, l := range lines {
		b.WriteString(l)
		var keys []string
		for ; next < len(p.typed) && p.typed[next].row == i; next++ {
			keys = append(keys, keyNames.Replace(p.typed[next].keys))
		}
		if len(keys) > 0 {
			b.WriteString("    # keys: " + strings.Join(keys, " "))
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}
