package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/coordination/zoocfg"
)

// This file is `keeper shell`, a zkCli-like shell on zkclient. Commands,
// flags and output follow Apache ZooKeeper 3.8's zkCli.sh (its cli
// package), so scripts written against zkCli keep working: results go to
// stdout, errors and "Created ..." to stderr, exactly as zkCli sends them.

// shellOptions are the flags of `keeper shell`.
type shellOptions struct {
	server            string // a connect string: host:port[,host:port...][/chroot]
	timeout           time.Duration
	readOnly          bool
	waitForConnection bool   // interactive: exit if the first connection fails, as zkCli -waitforconnection
	historyFile       string // the line editor's history; "" keeps none
	clientConf        string // a client configuration file (zkCli's -client-configuration)
	security          zkclient.Security
}

func newShellCmd() *cobra.Command {
	var o shellOptions
	cmd := &cobra.Command{
		Use:   "shell [command [args...]]",
		Short: "A zkCli-like shell; runs one command, or reads commands from stdin",
		Long: `A zkCli-like shell. With a command (keeper shell --server 127.0.0.1:2181 ls /)
it runs that command and exits, non-zero on error. Without one it reads
commands from stdin, one per line; type help for the list.

--server takes a connect string, as zkCli's -server does: one or more
host:port, comma-separated, tried in order, and an optional chroot that every
path is relative to (127.0.0.1:2181,127.0.0.1:2182/app). When the connection
breaks, the shell moves the session to the next server that answers, as the
Java client does (watches set before are not set again). zkCli's spellings
-server, -timeout (milliseconds), -r, -waitforconnection and
-client-configuration work too.

TLS and SASL are set as for zkCli: -D flags in CLIENT_JVMFLAGS (or JVMFLAGS),
or the same keys in a --client-conf properties file, which wins.
-Dzookeeper.client.secure=true connects with TLS, with the stores of
zookeeper.ssl.keyStore.* and zookeeper.ssl.trustStore.* (PEM, PKCS12 or JKS)
and zookeeper.ssl.hostnameVerification; -Djava.security.auth.login.config
names a JAAS file whose Client section (zookeeper.sasl.clientconfig) gives
the DigestLoginModule username and password for SASL DIGEST-MD5. A setting the
shell cannot honour (Kerberos, revocation checks) stops it before it
connects; a refused password is AuthFailed (docs/tls.md, docs/sasl.md).

On a terminal the shell edits lines (arrows, Emacs keys, Ctrl-R to search the
history), completes commands and znode paths with Tab, and keeps the history
in --history-file across sessions (addauth lines, which carry credentials, are
not kept). Ctrl-C abandons the line being typed; Ctrl-D or quit leaves.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// zkCli.sh passes these to the Java client: TLS and SASL.
			sec, err := loadClientSecurity(os.Getenv, o.clientConf, zoocfg.ClientJVMFlagsEnv, zoocfg.JVMFlagsEnv)
			if err != nil {
				return err
			}
			o.security = sec
			code := runShell(cmd.Context(), o, args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			if code != 0 {
				os.Exit(code) // the shell has printed its error, as zkCli does
			}
			return nil
		},
	}
	cmd.Flags().SetInterspersed(false) // `shell ls -R /` passes -R to ls
	cmd.Flags().StringVar(&o.server, "server", "127.0.0.1:2181",
		"connect string: host:port[,host:port...][/chroot]")
	o.timeout = 30 * time.Second
	cmd.Flags().Var((*msDuration)(&o.timeout), "timeout",
		"session timeout to ask for: a duration (30s) or milliseconds (30000), as zkCli's -timeout")
	cmd.Flags().BoolVarP(&o.readOnly, "readonly", "r", false, "accept a read-only server")
	cmd.Flags().BoolVar(&o.waitForConnection, "waitforconnection", false,
		"interactive: exit if the server cannot be reached, instead of starting unconnected")
	cmd.Flags().StringVar(&o.historyFile, "history-file", defaultHistoryFile(),
		`where the line editor keeps its history ("" for nowhere)`)
	cmd.Flags().StringVar(&o.clientConf, "client-conf", "",
		"a client configuration file (Java properties: zookeeper.client.secure, zookeeper.ssl.*, zookeeper.sasl.*, "+
			"java.security.auth.login.config), as zkCli's -client-configuration; it wins over CLIENT_JVMFLAGS")
	cmd.Flags().StringVar(&o.clientConf, "client-configuration", "", "zkCli's spelling of --client-conf")
	cmd.Flags().Lookup("client-configuration").Hidden = true
	// zkCli spells its long options with one dash.
	withSingleDashFlags(cmd, []string{"-server", "-timeout", "-waitforconnection", "-readonly", "-client-configuration"}, cmd.RunE)
	return cmd
}

// msDuration is a duration flag that also takes a bare number of
// milliseconds, as zkCli's -timeout does.
type msDuration time.Duration

func (d *msDuration) String() string { return time.Duration(*d).String() }
func (d *msDuration) Type() string   { return "duration" }

func (d *msDuration) Set(s string) error {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		*d = msDuration(time.Duration(ms) * time.Millisecond)
	} else if v, err := time.ParseDuration(s); err == nil {
		*d = msDuration(v)
	} else {
		return fmt.Errorf("%q is neither a duration (30s) nor milliseconds (30000)", s)
	}
	if *d <= 0 {
		return fmt.Errorf("%q: the timeout must be positive", s)
	}
	return nil
}

// runShell connects and runs args as one command, or, if args is empty,
// every line of in. It returns the exit status: that of the command, or of
// the last command read from in.
func runShell(ctx context.Context, o shellOptions, args []string, in io.Reader, out, errOut io.Writer) int {
	if ctx == nil {
		ctx = context.Background()
	}
	interactive := len(args) == 0
	if interactive {
		fmt.Fprintf(out, "Connecting to %s\n", o.server)
	}
	cs, err := parseConnectString(o.server)
	if err != nil {
		fmt.Fprintf(errOut, "%v\n", err)
		return 2 // zkCli's INVALID_INVOCATION
	}
	s := &shell{ctx: ctx, opts: o, server: o.server, out: out, errOut: errOut, loc: time.Local, printWatches: true}
	conn, err := dialAny(ctx, cs, o)
	if err != nil {
		fmt.Fprintf(errOut, "Cannot connect to %s: %v\n", o.server, err)
		if !interactive || o.waitForConnection {
			return 1
		}
		// As zkCli without -waitforconnection, the shell starts anyway;
		// connect tries again.
	} else {
		s.attach(conn)
	}
	defer s.close()
	if !interactive {
		s.run(args)
		s.flushEvents()
		return s.status
	}
	if s.conn != nil {
		s.printWatch("SyncConnected", "None", "")
	}
	src := s.lineSource(in)
	defer src.close()
	return s.repl(src)
}

// lineSource returns the line editor when in is a terminal, plain lines
// otherwise. While the editor runs, the shell's output goes through it so
// that a notification printed while the user types keeps the line intact.
func (s *shell) lineSource(in io.Reader) lineSource {
	f, ok := in.(*os.File)
	if !ok || !isTerminal(in) {
		return newScanSource(in, false, s.out, s.errOut)
	}
	ed, err := newEditSource(f, s.out, s.errOut, s.opts.historyFile, completer{s})
	if err != nil {
		// A terminal the editor cannot drive still works, without editing.
		fmt.Fprintf(s.errOut, "line editing is off: %v\n", err)
		return newScanSource(in, true, s.out, s.errOut)
	}
	s.out = ed.stdout()
	return ed
}

// isTerminal reports whether r is a terminal, where a prompt helps.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// shell is one session of the shell. Not safe for concurrent use, except
// that the completer reads conn while a line is being typed.
type shell struct {
	ctx          context.Context
	opts         shellOptions
	conn         *zkConn // nil while not connected (after close, or a failed connect)
	server       string  // the connect string of the session, for the prompt
	out, errOut  io.Writer
	events       <-chan zkproto.WatcherEvent // nil once closed and reported
	loc          *time.Location              // for stat dates, as the JVM's default zone
	status       int                         // exit status of the last command
	tokens       []string                    // the arguments of the command being run, as typed
	count        int                         // number of the next command: history and the prompt
	history      map[int]string              // command number -> line, the last maxHistoryEntries
	printWatches bool                        // print notifications (printwatches on|off)
	closed       bool                        // the session was closed by quit or close
	endReported  bool                        // the connection's end was printed
	quit         bool                        // quit ran
	auths        []authInfo                  // the session's addauths, sent again after a failover
}

// repl runs the lines of src until its end or quit. Notifications that
// arrive while it waits for input are printed as they come.
func (s *shell) repl(src lineSource) int {
	ask, results, stop := make(chan string), make(chan lineResult), make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case prompt := <-ask:
				line, err := src.readLine(prompt)
				select {
				case results <- lineResult{line, err}:
				case <-stop:
					return
				}
			case <-stop:
				return
			}
		}
	}()
	for {
		ask <- s.prompt()
		r := s.waitLine(results)
		switch {
		case errors.Is(r.err, errInterrupted):
			continue
		case r.err != nil:
			return s.status
		case strings.TrimSpace(r.line) == "":
			continue
		}
		src.remember(r.line)
		s.addHistory(s.count, r.line)
		s.run(tokenize(r.line))
		s.flushEvents()
		s.count++
		if s.quit {
			return s.status
		}
	}
}

// lineResult is one readLine's outcome.
type lineResult struct {
	line string
	err  error
}

// waitLine waits for the next line, printing notifications meanwhile.
func (s *shell) waitLine(results <-chan lineResult) lineResult {
	for {
		select {
		case r := <-results:
			return r
		case ev, ok := <-s.events:
			if !ok {
				s.events = nil
				s.reportEnd()
				s.failoverIfLost()
				continue
			}
			s.printEvent(ev)
		}
	}
}

// prompt is zkCli's prompt: [zk: host:port(STATE) count].
func (s *shell) prompt() string {
	state := "CONNECTED"
	if s.conn == nil {
		return fmt.Sprintf("[zk: %s(CLOSED) %d] ", s.server, s.count)
	}
	switch err := s.conn.Err(); {
	case errors.Is(err, zkproto.ErrAuthFailed):
		state = "AUTH_FAILED"
	case err != nil:
		state = "CLOSED"
	case s.conn.ReadOnly():
		state = "CONNECTEDREADONLY"
	}
	return fmt.Sprintf("[zk: %s(%s) %d] ", s.server, state, s.count)
}

// close ends the session unless quit or close already did.
func (s *shell) close() {
	if !s.closed && s.conn != nil {
		s.closed = true
		s.conn.Close()
	}
}

// run runs one command, prints its outcome, and sets s.status.
func (s *shell) run(tokens []string) {
	if len(tokens) == 0 {
		return
	}
	name := tokens[0]
	switch name {
	case "quit":
		s.quit = true
		if s.conn != nil {
			s.closeSession()
		}
		return
	case "help":
		s.usage(s.out)
		s.status = 0
		return
	case "redo": // these take their arguments as typed
		s.fail(s.redo(tokens[1:]))
		return
	case "connect":
		s.fail(s.connect(tokens[1:]))
		return
	}
	c, ok := findCommand(name)
	if !ok {
		s.usage(s.errOut)
		s.fail(&cliError{msg: "Command not found: " + name, code: 127})
		return
	}
	s.flushEvents()
	s.failoverIfLost() // a connection that broke since: try the other servers first
	flags, args, err := parseFlags(tokens[1:], c.flags)
	s.tokens = tokens[1:]
	if c.wordFlags {
		flags, args, err = nil, tokens[1:], nil
	}
	if err == nil {
		err = c.run(s, flags, args)
		if errors.Is(err, errUsage) {
			err = &cliError{msg: c.name + " " + c.usage}
		}
	}
	s.fail(err)
}

// fail prints err, if any, as zkCli does, and sets the exit status.
func (s *shell) fail(err error) {
	s.status = 0
	if err == nil {
		return
	}
	var ce *cliError
	if !errors.As(err, &ce) {
		ce = &cliError{msg: err.Error()}
	}
	s.errf("%s\n", ce.msg)
	s.status = ce.exitCode()
}

// usage prints the command list in zkCli's format.
func (s *shell) usage(w io.Writer) {
	s.flushEvents()
	fmt.Fprintln(w, "keeper shell --server host:port[,host:port...][/chroot] [cmd args]")
	for _, c := range commands {
		fmt.Fprintf(w, "\t%s %s\n", c.name, c.usage)
	}
}

// outf and errf print to stdout and stderr, after any notifications that
// arrived before: the server sends a write's events before its reply, so
// a command's output follows the events it caused, as in zkCli.
func (s *shell) outf(format string, args ...any) {
	s.flushEvents()
	fmt.Fprintf(s.out, format, args...)
}

func (s *shell) errf(format string, args ...any) {
	s.flushEvents()
	fmt.Fprintf(s.errOut, format, args...)
}

// flushEvents prints the notifications already received.
func (s *shell) flushEvents() {
	for s.events != nil {
		select {
		case ev, ok := <-s.events:
			if !ok {
				s.events = nil
				s.reportEnd()
				return
			}
			s.printEvent(ev)
		default:
			return
		}
	}
}

// reportEnd prints the state event zkCli's watcher gets when the
// connection ends other than by quit.
func (s *shell) reportEnd() {
	if s.closed || s.endReported || s.conn == nil {
		return
	}
	s.endReported = true
	state := "Disconnected"
	if errors.Is(s.conn.Err(), zkproto.ErrAuthFailed) {
		state = "AuthFailed"
	}
	s.printWatch(state, "None", "")
}

// printEvent prints a notification as zkCli's watcher does.
func (s *shell) printEvent(ev zkproto.WatcherEvent) {
	state := "SyncConnected"
	if ev.State != zkproto.StateSyncConnected {
		state = fmt.Sprintf("Unknown(%d)", ev.State)
	}
	path := ev.Path
	if s.conn != nil {
		s.conn.watchFired(ev)
		path = s.conn.rel(path)
	}
	s.printWatch(state, eventTypeName(ev.Type), path)
}

// printWatch prints one WatchedEvent, unless printwatches is off; an
// empty path prints as null.
func (s *shell) printWatch(state, typ, path string) {
	if !s.printWatches {
		return
	}
	if path == "" {
		path = "null"
	}
	fmt.Fprintf(s.out, "\nWATCHER::\n\nWatchedEvent state:%s type:%s path:%s\n", state, typ, path)
}

// eventTypeName is Java's Watcher.Event.EventType name.
func eventTypeName(t zkproto.EventType) string {
	switch t {
	case zkproto.EventNone:
		return "None"
	case zkproto.EventNodeCreated:
		return "NodeCreated"
	case zkproto.EventNodeDeleted:
		return "NodeDeleted"
	case zkproto.EventNodeDataChanged:
		return "NodeDataChanged"
	case zkproto.EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case zkproto.EventDataWatchRemoved:
		return "DataWatchRemoved"
	case zkproto.EventChildWatchRemoved:
		return "ChildWatchRemoved"
	case zkproto.EventPersistentWatchRemoved:
		return "PersistentWatchRemoved"
	}
	return fmt.Sprintf("Unknown(%d)", t)
}

// cliError is a failed command: a message for stderr and an exit status.
type cliError struct {
	msg  string
	code int // 0 means 1
}

func (e *cliError) Error() string { return e.msg }

func (e *cliError) exitCode() int {
	if e.code == 0 {
		return 1
	}
	return e.code
}

// errUsage makes execute print the command's usage line.
var errUsage = errors.New("usage")

// command is one shell command.
type command struct {
	name      string
	usage     string // zkCli's option string, shown after the name
	flags     string // getopt-style: a letter per flag, ':' after one with a value
	run       func(s *shell, f flagSet, args []string) error
	wordFlags bool // run parses its own options (-file path): args are the tokens as typed
}

// commands is sorted by name, as zkCli lists them (Java's String order:
// capitals first).
var commands = []command{
	{"addWatch", "[-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE", "m:", whileConnected((*shell).addWatch), false},
	{"addauth", "scheme auth", "", whileConnected((*shell).addAuth), false},
	{"close", "", "", whileConnected((*shell).closeCmd), false},
	{"config", "[-c] [-w] [-s]", "cws", whileConnected((*shell).config), false},
	{"connect", "host:port", "", nil, false},
	{"create", "[-s] [-e] [-c] [-t ttl] path [data] [acl]", "sect:", whileConnected((*shell).create), false},
	{"delete", "[-v version] path", "v:", whileConnected((*shell).delete), false},
	{"deleteall", "path [-b batch size]", "b:", whileConnected((*shell).deleteAll), false},
	{"delquota", "[-n|-b|-N|-B] path", "nbNB", whileConnected((*shell).delQuota), false},
	{"get", "[-s] [-w] path", "sw", whileConnected((*shell).get), false},
	{"getAcl", "[-s] path", "s", whileConnected((*shell).getACL), false},
	{"getAllChildrenNumber", "path", "", whileConnected((*shell).getAllChildrenNumber), false},
	{"getEphemerals", "path", "", whileConnected((*shell).getEphemerals), false},
	{"help", "", "", nil, false},
	{"history", "", "", (*shell).printHistory, false},
	{"listquota", "path", "", whileConnected((*shell).listQuota), false},
	{"ls", "[-s] [-w] [-R] path", "swR", whileConnected((*shell).ls), false},
	{"printwatches", "on|off", "", (*shell).setPrintWatches, false},
	{"quit", "", "", nil, false},
	{"reconfig", reconfigUsage, "", whileConnected(func(s *shell, _ flagSet, args []string) error { return s.reconfig(args) }), true},
	{"redo", "cmdno", "", nil, false},
	{"removewatches", "path [-c|-d|-a] [-l]", "cdal", whileConnected((*shell).removeWatches), false},
	{"set", "[-s] [-v version] path data", "sv:", whileConnected((*shell).set), false},
	{"setAcl", "[-s] [-v version] [-R] path acl", "sv:R", whileConnected((*shell).setACL), false},
	{"setquota", "-n|-b|-N|-B val path", "n:b:N:B:", whileConnected((*shell).setQuota), false},
	{"stat", "[-w] path", "w", whileConnected((*shell).stat), false},
	{"sync", "path", "", whileConnected((*shell).sync), false},
	{"version", "", "", whileConnected((*shell).version), false},
	{"whoami", "", "", whileConnected((*shell).whoAmI), false},
}

// findCommand returns the command called name; help, quit, connect and
// redo, which run handles itself, are not found.
func findCommand(name string) (command, bool) {
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == name })
	if i < 0 || commands[i].run == nil {
		return command{}, false
	}
	return commands[i], true
}

// tokenize splits a line as zkCli does: on whitespace, except inside a
// pair of single or double quotes, which are removed. A quote without its
// pair is dropped.
func tokenize(line string) []string {
	var out []string
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case isSpace(c):
			i++
		case c == '"' || c == '\'':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				i++
				continue
			}
			out = append(out, line[i+1:i+1+end])
			i += end + 2
		default:
			j := i
			for j < len(line) && !isSpace(line[j]) {
				j++
			}
			out = append(out, line[i:j])
			i = j
		}
	}
	return out
}

func isSpace(c byte) bool { return strings.IndexByte(" \t\n\v\f\r", c) >= 0 }

// flagSet holds the flags of one command line: the letter, and the value
// for flags that take one.
type flagSet map[byte]string

func (f flagSet) has(c byte) bool { _, ok := f[c]; return ok }

// parseFlags separates flags from arguments as Apache Commons CLI's
// DefaultParser does for zkCli: flags may come anywhere, may be grouped
// (-se), and a value may follow its letter directly (-v3) or as the next
// token; "--" ends the flags.
func parseFlags(tokens []string, spec string) (flagSet, []string, error) {
	flags := flagSet{}
	var args []string
	for i := 0; i < len(tokens); i++ {
		tok := tokens[i]
		if tok == "--" {
			return flags, append(args, tokens[i+1:]...), nil
		}
		if len(tok) < 2 || tok[0] != '-' {
			args = append(args, tok)
			continue
		}
		for j := 1; j < len(tok); j++ {
			k := strings.IndexByte(spec, tok[j])
			if k < 0 || tok[j] == ':' {
				return nil, nil, &cliError{msg: "Unrecognized option: " + tok}
			}
			if k+1 < len(spec) && spec[k+1] == ':' {
				switch {
				case j+1 < len(tok):
					flags[tok[j]] = tok[j+1:]
				case i+1 < len(tokens):
					i++
					flags[tok[j]] = tokens[i]
				default:
					return nil, nil, &cliError{msg: "Missing argument for option: " + tok[j:j+1]}
				}
				break
			}
			flags[tok[j]] = ""
		}
	}
	return flags, args, nil
}

// intFlag parses the value of an int flag, or returns def if it is absent.
func intFlag(f flagSet, c byte, def int32) (int32, error) {
	v, ok := f[c]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, &cliError{msg: fmt.Sprintf("-%c argument must be an int value", c)}
	}
	return int32(n), nil
}

// checkPath applies the Java client's path check (PathUtils.validatePath)
// with its messages; zkCli reports them before sending anything.
func checkPath(path string, sequential bool) error {
	if sequential {
		path += "1"
	}
	switch {
	case path == "":
		return &cliError{msg: "Path length must be > 0"}
	case path[0] != '/':
		return &cliError{msg: "Path must start with / character"}
	case path == "/":
		return nil
	case path[len(path)-1] == '/':
		return &cliError{msg: "Path must not end with / character"}
	}
	chars := utf16.Encode([]rune(path)) // Java indexes UTF-16 code units
	reason := ""
	lastc := uint16('/')
	for i := 1; i < len(chars) && reason == ""; lastc, i = chars[i], i+1 {
		c := chars[i]
		atEnd := i+1 == len(chars) || chars[i+1] == '/'
		switch {
		case c == 0:
			reason = "null character not allowed"
		case c == '/' && lastc == '/':
			reason = "empty node name specified"
		case c == '.' && lastc == '.':
			if chars[i-2] == '/' && atEnd {
				reason = "relative paths not allowed"
			}
		case c == '.':
			if chars[i-1] == '/' && atEnd {
				reason = "relative paths not allowed"
			}
		case c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0:
			reason = "invalid character"
		}
		if reason != "" {
			reason += " @" + strconv.Itoa(i)
		}
	}
	if reason != "" {
		return &cliError{msg: fmt.Sprintf("Invalid path string %q caused by %s", path, reason)}
	}
	return nil
}

// keeperError turns an error from the server into zkCli's message for it
// (CliWrapperException); path is the command's path, used when the error
// carries none.
func keeperError(err error, path string) error {
	var zerr *zkproto.Error
	if err == nil || !errors.As(err, &zerr) {
		return err
	}
	if zerr.Path != "" {
		path = zerr.Path
	}
	prefix, ok := map[zkproto.Code]string{
		zkproto.CodeNoNode:                  "Node does not exist: ",
		zkproto.CodeNoChildrenForEphemerals: "Ephemerals cannot have children: ",
		zkproto.CodeNodeExists:              "Node already exists: ",
		zkproto.CodeNotEmpty:                "Node not empty: ",
		zkproto.CodeNotReadOnly:             "Not a read-only call: ",
		zkproto.CodeInvalidACL:              "Acl is not valid : ",
		zkproto.CodeNoAuth:                  "Insufficient permission : ",
		zkproto.CodeBadArguments:            "Arguments are not valid : ",
		zkproto.CodeBadVersion:              "version No is not valid : ",
		zkproto.CodeQuotaExceeded:           "Quota has exceeded : ",
	}[zerr.Code]
	if !ok {
		return &cliError{msg: keeperMessage(zerr.Code, path)}
	}
	return &cliError{msg: prefix + path}
}

// keeperMessage is Java's KeeperException message.
func keeperMessage(c zkproto.Code, path string) string {
	msg := "KeeperErrorCode = " + codeMessage(c)
	if path != "" {
		msg += " for " + path
	}
	return msg
}

// codeMessage is KeeperException.getCodeMessage: the code's name, except
// where Java spells it out.
func codeMessage(c zkproto.Code) string {
	switch c {
	case zkproto.CodeOK:
		return "ok"
	case zkproto.CodeNotEmpty:
		return "Directory not empty"
	case zkproto.CodeSessionExpired:
		return "Session expired"
	case zkproto.CodeInvalidCallback:
		return "Invalid callback"
	case zkproto.CodeSessionMoved:
		return "Session moved"
	case zkproto.CodeNotReadOnly:
		return "Not a read-only call"
	case zkproto.CodeEphemeralOnLocalSession:
		return "Ephemeral node on local session"
	case zkproto.CodeNoWatcher:
		return "No such watcher"
	case zkproto.CodeReconfigDisabled:
		return "Reconfig is disabled"
	case zkproto.CodeSessionClosedRequireSaslAuth:
		return "Session closed because client failed to authenticate"
	case zkproto.CodeQuotaExceeded:
		return "Quota has exceeded"
	case zkproto.CodeThrottled:
		return "Op throttled due to high load"
	}
	return c.String()
}

// parseACL parses zkCli's ACL syntax, scheme:id:perms[,...]; like zkCli
// it reports malformed entries and unknown permission letters on stderr
// and skips them.
func (s *shell) parseACL(text string) []zkproto.ACL {
	parts := strings.Split(text, ",")
	for len(parts) > 1 && parts[len(parts)-1] == "" { // Java's split drops trailing empties
		parts = parts[:len(parts)-1]
	}
	if text == "," {
		parts = nil
	}
	acl := []zkproto.ACL{}
	for _, a := range parts {
		first, last := strings.IndexByte(a, ':'), strings.LastIndexByte(a, ':')
		if first < 0 || first == last {
			s.errf("%s does not have the form scheme:id:perm\n", a)
			continue
		}
		var perms int32
		for _, c := range a[last+1:] {
			switch c {
			case 'r':
				perms |= zkproto.PermRead
			case 'w':
				perms |= zkproto.PermWrite
			case 'c':
				perms |= zkproto.PermCreate
			case 'd':
				perms |= zkproto.PermDelete
			case 'a':
				perms |= zkproto.PermAdmin
			default:
				s.errf("Unknown perm type: %c\n", c)
			}
		}
		acl = append(acl, zkproto.ACL{Perms: perms, ID: zkproto.ID{Scheme: a[:first], ID: a[first+1 : last]}})
	}
	return acl
}

// permString is ZKUtil.getPermString: the letters in cdrwa order.
func permString(perms int32) string {
	var b strings.Builder
	for _, p := range []struct {
		bit    int32
		letter byte
	}{{zkproto.PermCreate, 'c'}, {zkproto.PermDelete, 'd'}, {zkproto.PermRead, 'r'}, {zkproto.PermWrite, 'w'}, {zkproto.PermAdmin, 'a'}} {
		if perms&p.bit != 0 {
			b.WriteByte(p.letter)
		}
	}
	return b.String()
}

// csvString is how Java's jute toString prints a string field.
func csvString(v string) string {
	r := strings.NewReplacer("\x00", "%00", "\n", "%0A", "\r", "%0D", ",", "%2C", "}", "%7D", "%", "%25")
	return "'" + r.Replace(v)
}

// printStat prints a Stat as zkCli's StatPrinter does.
func (s *shell) printStat(st zkproto.Stat) {
	s.outf("cZxid = 0x%x\nctime = %s\nmZxid = 0x%x\nmtime = %s\npZxid = 0x%x\n"+
		"cversion = %d\ndataVersion = %d\naclVersion = %d\nephemeralOwner = 0x%x\n"+
		"dataLength = %d\nnumChildren = %d\n",
		uint64(st.Czxid), javaDate(st.Ctime, s.loc), uint64(st.Mzxid), javaDate(st.Mtime, s.loc),
		uint64(st.Pzxid), st.Cversion, st.Version, st.Aversion, uint64(st.EphemeralOwner),
		st.DataLength, st.NumChildren)
}

// javaDate formats ms since the epoch as java.util.Date.toString does.
func javaDate(ms int64, loc *time.Location) string {
	return time.UnixMilli(ms).In(loc).Format("Mon Jan 02 15:04:05 MST 2006")
}

// javaString decodes data as Java's new String(data, UTF_8) does, with a
// replacement character for each byte that is not valid UTF-8.
func javaString(data []byte) string {
	if utf8.Valid(data) {
		return string(data)
	}
	var b strings.Builder
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		b.WriteRune(r) // utf8.RuneError for an invalid byte
		data = data[size:]
	}
	return b.String()
}

// stringList prints like Java's List.toString: [a, b].
func stringList(items []string) string { return "[" + strings.Join(items, ", ") + "]" }
