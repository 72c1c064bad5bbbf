package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chzyer/readline"
)

// This file is where the shell's lines come from: a line editor with
// history and completion on a terminal (as zkCli's JLine console), plain
// lines otherwise (a script on stdin).

// lineSource gives the shell one line at a time.
type lineSource interface {
	// readLine returns the next line, showing prompt where that helps;
	// io.EOF at the end, errInterrupted when the user abandoned the line.
	readLine(prompt string) (string, error)
	// remember adds a line the shell ran to the history, if there is one.
	remember(line string)
	close() error
}

// errInterrupted is a line abandoned with Ctrl-C: the shell asks again.
var errInterrupted = errors.New("interrupted")

// scanSource reads plain lines, for stdin that is not a terminal.
type scanSource struct {
	sc     *bufio.Scanner
	out    io.Writer // where the prompt goes; nil for none
	errOut io.Writer
}

func newScanSource(in io.Reader, prompt bool, out, errOut io.Writer) *scanSource {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20) // a set command carries its data
	s := &scanSource{sc: sc, errOut: errOut}
	if prompt {
		s.out = out
	}
	return s
}

func (s *scanSource) readLine(prompt string) (string, error) {
	if s.out != nil {
		fmt.Fprint(s.out, prompt)
	}
	if s.sc.Scan() {
		return s.sc.Text(), nil
	}
	if err := s.sc.Err(); err != nil {
		fmt.Fprintf(s.errOut, "reading commands: %v\n", err)
	}
	return "", io.EOF
}

func (s *scanSource) remember(string) {}
func (s *scanSource) close() error    { return nil }

// historyLimitLines bounds the persistent history: enough for weeks of an
// operator's commands, small enough to load at once at every start.
const historyLimitLines = 1000

// defaultHistoryFile is where the history persists unless --history-file
// says otherwise: ~/.keeper_shell_history, or none without a home.
func defaultHistoryFile() string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".keeper_shell_history")
}

// editSource is the line editor: Emacs-style editing keys, arrows, Ctrl-R
// search, history kept in historyFile across sessions, Tab completion of
// commands and znode paths.
type editSource struct {
	rl *readline.Instance
}

// newEditSource starts the line editor on the terminal in. Its output
// goes to out; Stdout returns a writer that redraws the line being edited
// after text printed while the user types (a watch notification).
func newEditSource(in *os.File, out, errOut io.Writer, historyFile string, complete readline.AutoCompleter) (*editSource, error) {
	if historyFile != "" {
		// The history holds what was typed; keep it the user's alone.
		f, err := os.OpenFile(historyFile, os.O_CREATE|os.O_RDONLY, 0o600)
		if err != nil {
			fmt.Fprintf(errOut, "history is not kept: %v\n", err)
			historyFile = ""
		} else {
			f.Close()
		}
	}
	rl, err := readline.NewEx(&readline.Config{
		HistoryFile:            historyFile,
		HistoryLimit:           historyLimitLines,
		DisableAutoSaveHistory: true, // remember decides what is kept
		HistorySearchFold:      true,
		AutoComplete:           complete,
		InterruptPrompt:        "^C",
		Stdin:                  in,
		Stdout:                 out,
		Stderr:                 errOut,
		FuncIsTerminal:         func() bool { return true },
	})
	if err != nil {
		return nil, err
	}
	return &editSource{rl: rl}, nil
}

func (e *editSource) readLine(prompt string) (string, error) {
	e.rl.SetPrompt(prompt)
	line, err := e.rl.Readline()
	switch {
	case errors.Is(err, readline.ErrInterrupt):
		return "", errInterrupted
	case err != nil:
		return "", io.EOF
	}
	return line, nil
}

// remember keeps line in the history, except addauth lines, which carry
// credentials.
func (e *editSource) remember(line string) {
	if t := tokenize(line); len(t) > 0 && t[0] == "addauth" {
		return
	}
	e.rl.SaveHistory(line)
}

func (e *editSource) close() error { return e.rl.Close() }

// stdout is a writer that keeps the line being edited intact.
func (e *editSource) stdout() io.Writer { return e.rl.Stdout() }

// completeTimeout bounds the children lookup behind one Tab: a slow
// server leaves the line as it is rather than freezing the terminal.
const completeTimeout = 2 * time.Second

// maxCompletions bounds the candidates one Tab shows: a node with a
// million children is not listed on the terminal.
const maxCompletions = 500

// completer completes the word under the cursor as zkCli's JLine completer
// does: a command name first, then znode paths (a word starting with /),
// by listing the children of the path's parent.
type completer struct {
	s *shell
}

// Do implements readline.AutoCompleter: it returns the candidates' text
// after the part already typed, and that part's length.
func (c completer) Do(line []rune, pos int) ([][]rune, int) {
	before := string(line[:pos])
	start := strings.LastIndexAny(before, " \t") + 1
	word := before[start:]
	if strings.TrimSpace(before[:start]) == "" {
		return suffixes(commandNames(), word, " "), len([]rune(word))
	}
	if !strings.HasPrefix(word, "/") || c.s.conn == nil {
		return nil, 0
	}
	dir, prefix := word[:strings.LastIndexByte(word, '/')], word[strings.LastIndexByte(word, '/')+1:]
	if dir == "" {
		dir = "/"
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, completeTimeout)
	defer cancel()
	kids, _, err := c.s.conn.Children(ctx, dir, false)
	if err != nil {
		return nil, 0
	}
	slices.Sort(kids)
	return suffixes(kids, prefix, ""), len([]rune(prefix))
}

// suffixes returns, for each candidate that starts with prefix, the rest
// of it followed by end.
func suffixes(candidates []string, prefix, end string) [][]rune {
	var out [][]rune
	for _, cand := range candidates {
		if strings.HasPrefix(cand, prefix) && len(out) < maxCompletions {
			out = append(out, []rune(cand[len(prefix):]+end))
		}
	}
	return out
}

// commandNames lists the shell's commands, sorted.
func commandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}
