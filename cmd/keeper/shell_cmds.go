package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
)

// The commands. Each follows its zkCli counterpart (org.apache.zookeeper.cli)
// in its argument checks, their order, and its output.

// watchCompat applies zkCli's old "name path watch" form: a second
// argument means -w, with a deprecation notice.
func (s *shell) watchCompat(f flagSet, args []string, name, form string) {
	if len(args) > 1 {
		s.errf("'%s path [watch]' has been deprecated. Please use '%s' instead.\n", name, form)
		f['w'] = ""
	}
}

func (s *shell) ls(f flagSet, args []string) error {
	s.watchCompat(f, args, "ls", "ls [-w] path")
	if len(args) < 1 {
		return errUsage
	}
	path, watch := args[0], f.has('w')
	if err := checkPath(path, false); err != nil {
		return err
	}
	if f.has('R') {
		return s.visitTree(path, watch, func(p string) error { s.outf("%s\n", p); return nil })
	}
	kids, st, err := s.conn.Children(s.ctx, path, watch)
	if err != nil {
		return keeperError(err, path)
	}
	slices.Sort(kids)
	s.outf("%s\n", stringList(kids))
	if f.has('s') {
		s.printStat(st)
	}
	return nil
}

// visitTree calls visit for path and every node below it in zkCli's
// order (ZKUtil.visitSubTreeDFS): a node's children, sorted, before their
// own subtrees. A node deleted during the walk is skipped.
func (s *shell) visitTree(path string, watch bool, visit func(string) error) error {
	if _, _, err := s.conn.Get(s.ctx, path, watch); err != nil {
		return keeperError(err, path)
	}
	if err := visit(path); err != nil {
		return err
	}
	return s.visitChildren(path, watch, visit)
}

func (s *shell) visitChildren(path string, watch bool, visit func(string) error) error {
	kids, _, err := s.conn.Children(s.ctx, path, watch)
	if errors.Is(err, zkproto.ErrNoNode) {
		return nil
	} else if err != nil {
		return keeperError(err, path)
	}
	slices.Sort(kids)
	for i, k := range kids {
		kids[i] = zkproto.ChildPath(path, k)
		if err := visit(kids[i]); err != nil {
			return err
		}
	}
	for _, k := range kids {
		if err := s.visitChildren(k, watch, visit); err != nil {
			return err
		}
	}
	return nil
}

func (s *shell) get(f flagSet, args []string) error {
	if len(args) < 1 {
		return errUsage
	}
	s.watchCompat(f, args, "get", "get [-s] [-w] path")
	path := args[0]
	if err := checkPath(path, false); err != nil {
		return err
	}
	data, st, err := s.conn.Get(s.ctx, path, f.has('w'))
	if err != nil {
		return keeperError(err, path)
	}
	text := "null"
	if data != nil {
		text = javaString(data)
	}
	s.outf("%s\n", text)
	if f.has('s') {
		s.printStat(st)
	}
	return nil
}

func (s *shell) set(f flagSet, args []string) error {
	if len(args) < 2 {
		return errUsage
	}
	path := args[0]
	version, err := intFlag(f, 'v', -1)
	if err != nil {
		return err
	}
	if err := checkPath(path, false); err != nil {
		return err
	}
	st, err := s.conn.Set(s.ctx, path, []byte(args[1]), version)
	if err != nil {
		return keeperError(err, path)
	}
	if f.has('s') {
		s.printStat(st)
	}
	return nil
}

// maxTTLMs is the largest TTL a node can carry (EphemeralType.TTL).
const maxTTLMs = 1<<40 - 1

func (s *shell) create(f flagSet, args []string) error {
	if len(args) < 1 {
		return errUsage
	}
	e, seq, c, t := f.has('e'), f.has('s'), f.has('c'), f.has('t')
	var ttl int64
	var err error
	switch {
	case c && (e || seq):
		return &cliError{msg: "-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential."}
	case t:
		if ttl, err = strconv.ParseInt(f['t'], 10, 64); err != nil {
			return &cliError{msg: "-t argument must be a long value"}
		}
	}
	switch {
	case t && e:
		return &cliError{msg: "TTLs cannot be used with Ephemeral znodes"}
	case t && c:
		return &cliError{msg: "TTLs cannot be used with Container znodes"}
	case t && (ttl <= 0 || ttl > maxTTLMs):
		return &cliError{msg: fmt.Sprintf("ttl must be positive and cannot be larger than: %d", int64(maxTTLMs))}
	}
	opts := zkclient.CreateOptions{Flags: createFlags(e, seq, c, t), TTL: time.Duration(ttl) * time.Millisecond}
	path := args[0]
	var data []byte
	if len(args) > 1 {
		data = []byte(args[1])
	}
	opts.ACL = zkproto.OpenACLUnsafe
	if len(args) > 2 {
		opts.ACL = s.parseACL(args[2])
	}
	if err := checkPath(path, seq); err != nil {
		return err
	}
	if len(opts.ACL) == 0 { // the Java client refuses an empty ACL itself
		s.errf("%s\n", keeperMessage(zkproto.CodeInvalidACL, ""))
		return &cliError{msg: "Acl is not valid : null"}
	}
	created, _, err := s.conn.Create(s.ctx, path, data, opts)
	if zkproto.CodeOf(err) == zkproto.CodeInvalidACL {
		s.errf("%s\n", keeperMessage(zkproto.CodeInvalidACL, path))
	}
	if err != nil {
		return keeperError(err, path)
	}
	s.errf("Created %s\n", created)
	return nil
}

// createFlags is zkCli's choice of CreateMode.
func createFlags(ephemeral, sequential, container, ttl bool) int32 {
	switch {
	case ephemeral && sequential:
		return zkproto.FlagEphemeralSequential
	case ephemeral:
		return zkproto.FlagEphemeral
	case sequential && ttl:
		return zkproto.FlagPersistentSequentialWithTTL
	case sequential:
		return zkproto.FlagPersistentSequential
	case container:
		return zkproto.FlagContainer
	case ttl:
		return zkproto.FlagPersistentWithTTL
	}
	return zkproto.FlagPersistent
}

func (s *shell) delete(f flagSet, args []string) error {
	if len(args) < 1 {
		return errUsage
	}
	if len(args) > 1 {
		s.errf("'delete path [version]' has been deprecated. Please use 'delete [-v version] path' instead.\n")
	}
	path := args[0]
	version, err := intFlag(f, 'v', -1)
	if err != nil {
		return err
	}
	if err := checkPath(path, false); err != nil {
		return err
	}
	return keeperError(s.conn.Delete(s.ctx, path, version), path)
}

// deleteAll deletes a subtree as ZKUtil.deleteRecursive does: it lists it
// breadth first, then deletes it deepest first, batchSize deletes per
// multi, stopping at the first multi that fails.
func (s *shell) deleteAll(f flagSet, args []string) error {
	if len(args) < 1 {
		return errUsage
	}
	batchSize, err := intFlag(f, 'b', 1000)
	if err != nil {
		return err
	}
	root := args[0]
	if err := checkPath(root, false); err != nil {
		return err
	}
	tree := []string{root}
	for i := 0; i < len(tree); i++ {
		kids, _, err := s.conn.Children(s.ctx, tree[i], false)
		if err != nil {
			return keeperError(err, tree[i])
		}
		for _, k := range kids {
			tree = append(tree, zkproto.ChildPath(tree[i], k))
		}
	}
	var ops []zkproto.MultiOp
	for i := len(tree) - 1; i >= 0; i-- {
		ops = append(ops, zkproto.MultiOp{Op: zkproto.OpDelete, Record: &zkproto.DeleteRequest{Path: tree[i], Version: -1}})
		if len(ops) == int(batchSize) || i == 0 {
			if _, err := s.conn.Multi(s.ctx, ops...); err != nil {
				s.errf("Failed to delete some node(s) in the subtree!\n")
				return nil
			}
			ops = nil
		}
	}
	return nil
}

func (s *shell) stat(f flagSet, args []string) error {
	if len(args) < 1 {
		return errUsage
	}
	s.watchCompat(f, args, "stat", "stat [-w] path")
	path := args[0]
	if err := checkPath(path, false); err != nil {
		return err
	}
	st, ok, err := s.conn.Exists(s.ctx, path, f.has('w'))
	switch {
	case err != nil:
		return keeperError(err, path)
	case !ok:
		return keeperError(zkproto.ErrNoNode, path)
	}
	s.printStat(st)
	return nil
}

func (s *shell) getACL(f flagSet, args []string) error {
	if len(args) < 1 {
		return errUsage
	}
	path := args[0]
	if err := checkPath(path, false); err != nil {
		return err
	}
	acl, st, err := s.conn.GetACL(s.ctx, path)
	if err != nil {
		return keeperError(err, path)
	}
	for _, a := range acl {
		// Java prints the Id record's toString, which ends in a newline.
		s.outf("%s,%s\n: %s\n", csvString(a.ID.Scheme), csvString(a.ID.ID), permString(a.Perms))
	}
	if f.has('s') {
		s.printStat(st)
	}
	return nil
}

func (s *shell) setACL(f flagSet, args []string) error {
	if len(args) < 2 {
		return errUsage
	}
	path := args[0]
	acl := s.parseACL(args[1])
	version, err := intFlag(f, 'v', -1)
	if err != nil {
		return err
	}
	if err := checkPath(path, false); err != nil {
		return err
	}
	if len(acl) == 0 { // the Java client refuses an empty ACL itself
		return &cliError{msg: "Acl is not valid : null"}
	}
	if f.has('R') {
		return s.visitTree(path, false, func(p string) error {
			if _, err := s.conn.SetACL(s.ctx, p, acl, version); err != nil {
				s.outf("%s\n", keeperMessage(zkproto.CodeOf(err), p))
			}
			return nil
		})
	}
	st, err := s.conn.SetACL(s.ctx, path, acl, version)
	if err != nil {
		return keeperError(err, path)
	}
	if f.has('s') {
		s.printStat(st)
	}
	return nil
}

// addAuth waits for the server's answer, unlike zkCli, which sends the
// packet and moves on; a rejection prints the AuthFailed event zkCli's
// watcher prints, and ends the session.
func (s *shell) addAuth(_ flagSet, args []string) error {
	if len(args) < 1 {
		return errUsage
	}
	var auth []byte
	if len(args) > 1 {
		auth = []byte(args[1])
	}
	err := s.conn.AddAuth(s.ctx, args[0], auth)
	if errors.Is(err, zkproto.ErrAuthFailed) {
		s.endReported = true // the connection is ending; say so once, here
		s.flushEvents()
		s.printWatch("AuthFailed", "None", "")
		return nil
	}
	if err == nil {
		s.auths = append(s.auths, authInfo{scheme: args[0], auth: auth})
	}
	return keeperError(err, "")
}

func (s *shell) sync(_ flagSet, args []string) error {
	if len(args) < 1 {
		return errUsage
	}
	path := args[0]
	if err := checkPath(path, false); err != nil {
		return err
	}
	_, err := s.conn.Sync(s.ctx, path)
	var zerr *zkproto.Error
	switch {
	case err == nil:
		s.outf("Sync is OK\n")
	case errors.As(err, &zerr):
		s.outf("Sync has failed. rc=%d\n", zerr.Code)
	default:
		return err
	}
	return nil
}

func (s *shell) whoAmI(_ flagSet, _ []string) error {
	ids, err := s.conn.WhoAmI(s.ctx)
	if err != nil {
		return keeperError(err, "")
	}
	s.outf("Auth scheme: User\n")
	for _, id := range ids {
		s.outf("%s: %s\n", id.AuthScheme, id.User)
	}
	return nil
}

func (s *shell) getAllChildrenNumber(_ flagSet, args []string) error {
	if len(args) < 1 {
		return errUsage
	}
	path := args[0]
	if err := checkPath(path, false); err != nil {
		return err
	}
	n, err := s.conn.GetAllChildrenNumber(s.ctx, path)
	if err != nil {
		return keeperError(err, path)
	}
	s.outf("%d\n", n)
	return nil
}

func (s *shell) getEphemerals(_ flagSet, args []string) error {
	path := "/"
	if len(args) > 0 {
		path = args[0]
	}
	if err := checkPath(path, false); err != nil {
		return err
	}
	eph, err := s.conn.GetEphemerals(s.ctx, path)
	if err != nil {
		return keeperError(err, path)
	}
	s.outf("%s\n", stringList(eph))
	return nil
}

func (s *shell) addWatch(f flagSet, args []string) error {
	if len(args) != 1 {
		return errUsage
	}
	mode := zkproto.AddWatchPersistentRecursive
	if m, ok := f['m']; ok {
		switch strings.ToUpper(m) {
		case "PERSISTENT":
			mode = zkproto.AddWatchPersistent
		case "PERSISTENT_RECURSIVE":
		default:
			return errUsage
		}
	}
	path := args[0]
	if err := checkPath(path, false); err != nil {
		return err
	}
	return keeperError(s.conn.AddWatch(s.ctx, path, mode), path)
}
