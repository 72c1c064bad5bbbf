package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"keeper/coordination/admin"
	"keeper/coordination/datatree"
	"keeper/coordination/zkproto"
)

// The commands about the shell's own session rather than the tree:
// history and redo, printwatches, connect and close, and the ones zkCli
// runs through ZooKeeperAdmin (config, reconfig) or answers itself
// (version, removewatches' local bookkeeping).

// maxHistoryEntries bounds the numbered history redo can reach; history
// prints the last 11 of them, as zkCli does.
const maxHistoryEntries = 1000

// addHistory records line as command number n.
func (s *shell) addHistory(n int, line string) {
	if s.history == nil {
		s.history = map[int]string{}
	}
	s.history[n] = line
	delete(s.history, n-maxHistoryEntries)
}

func (s *shell) printHistory(_ flagSet, _ []string) error {
	for i := max(s.count-10, 0); i <= s.count; i++ {
		line, ok := s.history[i]
		if !ok {
			line = "null" // Java prints a missing map entry so
		}
		s.outf("%d - %s\n", i, line)
	}
	return nil
}

// redo runs command number args[0] again, as command number s.count.
func (s *shell) redo(args []string) error {
	if len(args) < 1 {
		return nil // zkCli ignores a redo without a number
	}
	n, err := strconv.ParseInt(args[0], 0, 32)
	if err != nil {
		return &cliError{msg: fmt.Sprintf("For input string: %q", args[0])}
	}
	line, ok := s.history[int(n)]
	if int(n) >= s.count || n < 0 || !ok {
		return &cliError{msg: "Command index out of range"}
	}
	tokens := tokenize(line)
	if len(tokens) > 0 && tokens[0] == "redo" {
		return &cliError{msg: "No redoing redos"}
	}
	s.addHistory(s.count, line)
	s.run(tokens)
	return nil
}

func (s *shell) setPrintWatches(_ flagSet, args []string) error {
	if len(args) == 0 {
		onOff := "off"
		if s.printWatches {
			onOff = "on"
		}
		s.outf("printwatches is %s\n", onOff)
		return nil
	}
	s.printWatches = args[0] == "on"
	return nil
}

// connect ends the session and starts one with the connect string given,
// or with the current one again.
func (s *shell) connect(args []string) error {
	target := s.server
	if len(args) > 0 {
		target = args[0]
	}
	cs, err := parseConnectString(target)
	if err != nil {
		return &cliError{msg: err.Error()}
	}
	s.closeSession()
	s.server = target
	conn, err := dialAny(s.ctx, cs, s.opts)
	if err != nil {
		return &cliError{msg: fmt.Sprintf("Cannot connect to %s: %v", target, err)}
	}
	s.attach(conn)
	s.printWatch("SyncConnected", "None", "")
	return nil
}

// closeCmd ends the session; the shell stays, and connect starts another.
func (s *shell) closeCmd(_ flagSet, _ []string) error {
	s.closeSession()
	return nil
}

// closeSession closes the session, if any, printing the Closed event
// zkCli's watcher gets.
func (s *shell) closeSession() {
	if s.conn == nil {
		return
	}
	s.flushEvents()
	s.closed = true
	s.conn.Close()
	s.conn, s.events = nil, nil
	s.printWatch("Closed", "None", "")
}

// attach makes conn the shell's session.
func (s *shell) attach(conn *zkConn) {
	s.conn, s.events = conn, conn.Events()
	s.closed, s.endReported = false, false
}

// version prints the client's version line, as zkCli's version command,
// with the version string keeper's servers report (3.8.0-keeper-...).
func (s *shell) version(_ flagSet, _ []string) error {
	s.outf("ZooKeeper CLI version: %s\n", admin.ReadBuild().FullVersion())
	return nil
}

// config prints the ensemble's configuration (/zookeeper/config, read
// outside any chroot, as ZooKeeper.getConfig reads it); -c prints only
// the version and the client addresses.
func (s *shell) config(f flagSet, _ []string) error {
	data, st, err := s.conn.Conn.Get(s.ctx, datatree.ConfigPath, f.has('w'))
	if err != nil {
		return keeperError(err, "")
	}
	if f.has('w') {
		s.conn.watchSet(datatree.ConfigPath, watchData)
	}
	text := "null"
	if data != nil {
		text = javaString(data)
	}
	if f.has('c') {
		text = clientConfig(text)
	}
	s.outf("%s\n", text)
	if f.has('s') {
		s.printStat(st)
	}
	return nil
}

// clientConfig is ConfigUtils.getClientConfigStr: the config's version, a
// space, and the client address of every server line that has one
// (server.N=host:port:port[:role];[clientHost:]clientPort), in server-id
// order.
func clientConfig(config string) string {
	version := ""
	type server struct {
		id   int64
		addr string
	}
	var servers []server
	sc := bufio.NewScanner(strings.NewReader(config))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case !ok:
		case key == "version":
			version = value
		case strings.HasPrefix(key, "server."):
			id, err := strconv.ParseInt(strings.TrimPrefix(key, "server."), 10, 64)
			quorum, client, hasClient := strings.Cut(value, ";")
			if err != nil || !hasClient {
				continue
			}
			host, port, ok := strings.Cut(client, ":")
			if !ok {
				host, port = strings.Split(quorum, ":")[0], client
			}
			servers = append(servers, server{id, host + ":" + port})
		}
	}
	slices.SortFunc(servers, func(a, b server) int { return int(a.id - b.id) })
	addrs := make([]string, len(servers))
	for i, sv := range servers {
		addrs[i] = sv.addr
	}
	return version + " " + strings.Join(addrs, ",")
}

// The kinds of watch the shell keeps track of, for removewatches: the
// server does not say which watches it removed, and zkCli prints an event
// for each one its client had registered.
const (
	watchData = 1 << iota
	watchChild
	watchPersistent
)

// watchSet notes a watch of kind on path, a server path.
func (c *zkConn) watchSet(path string, kind int) {
	if c.watches == nil {
		c.watches = map[string]int{}
	}
	c.watches[path] |= kind
}

// watchFired forgets the one-shot watches an event triggered.
func (c *zkConn) watchFired(ev zkproto.WatcherEvent) {
	kinds, ok := c.watches[ev.Path]
	if !ok {
		return
	}
	switch ev.Type {
	case zkproto.EventNodeCreated, zkproto.EventNodeDataChanged:
		kinds &^= watchData
	case zkproto.EventNodeChildrenChanged:
		kinds &^= watchChild
	case zkproto.EventNodeDeleted:
		kinds &^= watchData | watchChild
	}
	if kinds == 0 {
		delete(c.watches, ev.Path)
	} else {
		c.watches[ev.Path] = kinds
	}
}

// removeWatches is zkCli's removewatches: -c, -d or -a (the default)
// selects child, data or any watches; -l removes them here even if the
// server cannot be told.
func (s *shell) removeWatches(f flagSet, args []string) error {
	if len(args) < 1 {
		return errUsage
	}
	path := args[0]
	if err := checkPath(path, false); err != nil {
		return err
	}
	typ, kinds := zkproto.WatcherAny, watchData|watchChild|watchPersistent
	switch {
	case f.has('c'):
		typ, kinds = zkproto.WatcherChildren, watchChild
	case f.has('d'):
		typ, kinds = zkproto.WatcherData, watchData
	}
	err := s.conn.RemoveWatches(s.ctx, path, typ)
	if err != nil && !f.has('l') {
		return keeperError(err, path)
	}
	abs := s.conn.abs(path)
	had := s.conn.watches[abs]
	if had&kinds == 0 && err != nil {
		return keeperError(err, path)
	}
	if rest := had &^ kinds; rest == 0 {
		delete(s.conn.watches, abs)
	} else {
		s.conn.watches[abs] = rest
	}
	// The Java client tells its watcher of each watch it dropped.
	for _, k := range []struct {
		kind int
		typ  string
	}{{watchData, "DataWatchRemoved"}, {watchChild, "ChildWatchRemoved"}, {watchPersistent, "PersistentWatchRemoved"}} {
		if had&kinds&k.kind != 0 {
			s.printWatch("SyncConnected", k.typ, path)
		}
	}
	return nil
}

// reconfigUsage is zkCli's usage line for reconfig.
const reconfigUsage = "[-s] [-v version] [[-file path] | [-members serverID=host:port1:port2;port3[,...]*]] | " +
	"[-add serverId=host:port1:port2;port3[,...]]* [-remove serverId[,...]*]"

// reconfig parses zkCli's reconfig options and sends the request; a
// server without reconfigEnabled answers ReconfigDisabled.
func (s *shell) reconfig(tokens []string) error {
	opts, err := parseWordFlags(tokens, map[string]bool{"s": false, "v": true, "file": true, "members": true, "add": true, "remove": true})
	if err != nil {
		return err
	}
	_, file := opts["file"]
	_, members := opts["members"]
	_, add := opts["add"]
	_, remove := opts["remove"]
	version := int64(-1)
	switch {
	case !file && !members && !add && !remove:
		return &cliError{msg: "reconfig " + reconfigUsage}
	case opts["v"] != "":
		if version, err = strconv.ParseInt(opts["v"], 16, 64); err != nil {
			return &cliError{msg: "-v must be followed by a long (configuration version)"}
		}
	}
	switch {
	case (file || members) && (add || remove):
		return &cliError{msg: "Can't use -file or -members together with -add or -remove (mixing incremental and non-incremental modes is not allowed)"}
	case file && members:
		return &cliError{msg: "Can't use -file and -members together (conflicting non-incremental modes)"}
	}
	req := &zkproto.ReconfigRequest{JoiningServers: strings.ToLower(opts["add"]), LeavingServers: strings.ToLower(opts["remove"]),
		CurConfigID: version}
	switch {
	case members:
		m := strings.ToLower(opts["members"])
		req.NewMembers = &m
	case file:
		m, err := membersFromFile(opts["file"])
		if err != nil {
			return &cliError{msg: fmt.Sprintf("Error processing %s%v", opts["file"], err)}
		}
		req.NewMembers = &m
	}
	_, rec, err := s.conn.Do(s.ctx, zkproto.OpReconfig, req)
	if err != nil {
		return keeperError(err, "")
	}
	if r, ok := rec.(*zkproto.GetDataResponse); ok {
		s.outf("Committed new configuration:\n%s\n", javaString(r.Data))
		if _, ok := opts["s"]; ok {
			s.printStat(r.Stat)
		}
	}
	return nil
}

// membersFromFile reads the server lines of a dynamic configuration file,
// as reconfig -file sends them.
func membersFromFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var lines []string
	for l := range strings.Lines(string(data)) {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "server.") || strings.HasPrefix(l, "group.") ||
			strings.HasPrefix(l, "weight.") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n"), nil
}

// parseWordFlags parses options spelled as words after one dash (-file
// path), as Commons CLI parses reconfig's; spec says which take a value.
// Every token must be an option or its value.
func parseWordFlags(tokens []string, spec map[string]bool) (map[string]string, error) {
	opts := map[string]string{}
	for i := 0; i < len(tokens); i++ {
		name, ok := strings.CutPrefix(tokens[i], "-")
		takesValue, known := spec[name]
		switch {
		case !ok || !known:
			return nil, &cliError{msg: "Unrecognized option: " + tokens[i]}
		case !takesValue:
			opts[name] = ""
		case i+1 == len(tokens):
			return nil, &cliError{msg: "Missing argument for option: " + name}
		default:
			i++
			opts[name] = tokens[i]
		}
	}
	return opts, nil
}

// whileConnected wraps a command that needs a session: without one it
// prints "Not connected", as zkCli does, and succeeds.
func whileConnected(run func(s *shell, f flagSet, args []string) error) func(s *shell, f flagSet, args []string) error {
	return func(s *shell, f flagSet, args []string) error {
		if s.conn == nil {
			s.outf("Not connected\n")
			return nil
		}
		return run(s, f, args)
	}
}
