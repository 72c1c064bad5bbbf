package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"keeper/coordination/datatree"
	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
)

// The quota commands of zkCli 3.8 (SetQuotaCommand, ListQuotaCommand,
// DelQuotaCommand): client-side edits of the zookeeper_limits and
// zookeeper_stats nodes under /zookeeper/quota, which the server then
// maintains and, with enforceQuota, enforces.

// quotaFlags are the limit options, in the order zkCli's option group
// lists them.
const quotaFlags = "nbNB"

// quotaFlagNames are the options' descriptions, as Commons CLI prints them.
var quotaFlagNames = map[byte]string{
	'n': "num soft quota", 'b': "bytes soft quota", 'N': "num hard quota", 'B': "bytes hard quota",
}

// quotaFlagKeys are the StatsTrack keys the options set.
var quotaFlagKeys = map[byte]string{
	'n': datatree.QuotaCount, 'b': datatree.QuotaBytes,
	'N': datatree.QuotaCountHardLimit, 'B': datatree.QuotaByteHardLimit,
}

// quotaOption returns the one limit option given, or false if none was.
// As with Commons CLI's option group, a second one is an error naming
// both, in the order tokens (the command's arguments) give them.
func quotaOption(tokens []string, f flagSet) (byte, bool, error) {
	var seen []byte
	for _, tok := range tokens {
		if tok == "--" {
			break
		}
		if len(tok) < 2 || tok[0] != '-' {
			continue
		}
		// Only the first letter of "-n5" is an option; later letters of
		// "-nb" are options too when the first takes no value (delquota).
		for j := 1; j < len(tok); j++ {
			c := tok[j]
			if strings.IndexByte(quotaFlags, c) < 0 || !f.has(c) {
				break
			}
			if !slices.Contains(seen, c) {
				seen = append(seen, c)
			}
			if f[c] != "" {
				break // the rest of the token is c's value
			}
		}
	}
	switch len(seen) {
	case 0:
		return 0, false, nil
	case 1:
		return seen[0], true, nil
	}
	return 0, false, &cliError{msg: fmt.Sprintf(
		"The option '%c' was specified but an option from this group has already been selected: '%c'", seen[1], seen[0])}
}

// setQuota is zkCli's setquota.
func (s *shell) setQuota(f flagSet, args []string) error {
	opt, ok, err := quotaOption(s.tokens, f)
	if err != nil {
		return err
	}
	if !ok {
		var names []string
		for _, c := range []byte(quotaFlags) {
			names = append(names, fmt.Sprintf("-%c %s", c, quotaFlagNames[c]))
		}
		return &cliError{msg: "Missing required option: [" + strings.Join(names, ", ") + "]"}
	}
	if len(args) < 1 {
		return errUsage
	}
	path := args[0]
	if strings.HasPrefix(path, datatree.QuotaPath) {
		s.errf("cannot set a quota under the path: %s\n", datatree.QuotaPath)
		return nil
	}
	var quota datatree.StatsTrack
	for _, c := range []byte(quotaFlags) {
		quota.Set(quotaFlagKeys[c], -1)
	}
	v, msg := quotaValue(opt, f[opt])
	if msg != "" {
		s.errf("%s\n", msg)
		return nil
	}
	quota.Set(quotaFlagKeys[opt], v)
	return s.createQuota(path, quota)
}

// quotaValue parses an option's value as SetQuotaCommand does: counts are
// Java ints above zero, bytes Java longs from zero. It returns zkCli's
// complaint, or "".
func quotaValue(opt byte, text string) (int64, string) {
	bits, least := 64, int64(0)
	if opt == 'n' || opt == 'N' {
		bits, least = 32, 1
	}
	v, err := strconv.ParseInt(text, 10, bits)
	switch {
	case err != nil:
		return 0, "NumberFormatException happens when parsing the option value"
	case v < least && least == 1:
		return 0, "the num quota must be greater than zero"
	case v < least:
		return 0, "the bytes quota must be greater than or equal to zero"
	}
	return v, ""
}

// createQuota is SetQuotaCommand.createQuota: it refuses a path that does
// not exist or that has a quota above or below it, creates the quota's
// directories, then the limits and stats nodes, or, if the quota exists,
// sets the limits given and keeps the others. It warns (on stdout) when a
// limit is below what the subtree already holds.
func (s *shell) createQuota(path string, quota datatree.StatsTrack) error {
	if err := checkPath(path, false); err != nil {
		return err
	}
	if _, ok, err := s.conn.Exists(s.ctx, path, false); err != nil {
		return keeperError(err, path)
	} else if !ok {
		return &cliError{msg: path + " does not exist."}
	}
	if err := s.quotaChildCheck(path); err != nil {
		return err
	}
	if err := s.quotaParentCheck(path); err != nil {
		return err
	}
	dir := datatree.QuotaPath
	if err := s.createIfMissing(datatree.ZooKeeperPath, dir); err != nil {
		return err
	}
	for _, name := range javaSplitSlash(path)[1:] {
		dir += "/" + name
		if err := s.createIfMissing(dir); err != nil {
			return err
		}
	}
	limitPath, statPath := dir+"/"+datatree.QuotaLimitNode, dir+"/"+datatree.QuotaStatNode
	_, exists, err := s.conn.Exists(s.ctx, limitPath, false)
	if err != nil {
		return keeperError(err, limitPath)
	}
	if !exists {
		if _, _, err := s.conn.Create(s.ctx, limitPath, []byte(quota.String()), zkclient.CreateOptions{}); err != nil {
			return keeperError(err, limitPath)
		}
		var zero datatree.StatsTrack
		zero.Set(datatree.QuotaCount, 0)
		zero.Set(datatree.QuotaBytes, 0)
		if _, _, err := s.conn.Create(s.ctx, statPath, []byte(zero.String()), zkclient.CreateOptions{}); err != nil {
			return keeperError(err, statPath)
		}
		limits, err := s.readQuota(limitPath)
		if err != nil {
			return err
		}
		stats, err := s.readQuota(statPath)
		if err != nil {
			return err
		}
		s.warnQuota(limits, stats)
		return nil
	}
	limits, err := s.readQuota(limitPath)
	if err != nil {
		return err
	}
	for _, c := range []byte(quotaFlags) {
		if v := quota.Get(quotaFlagKeys[c]); v > -1 {
			limits.Set(quotaFlagKeys[c], v)
		}
	}
	stats, err := s.readQuota(statPath)
	if err != nil {
		return err
	}
	s.warnQuota(limits, stats)
	_, err = s.conn.Set(s.ctx, limitPath, []byte(limits.String()), -1)
	return keeperError(err, limitPath)
}

// createIfMissing creates each path that does not exist, with null data;
// a race with another creator is fine.
func (s *shell) createIfMissing(paths ...string) error {
	for _, p := range paths {
		_, ok, err := s.conn.Exists(s.ctx, p, false)
		if err != nil {
			return keeperError(err, p)
		}
		if ok {
			continue
		}
		if _, _, err := s.conn.Create(s.ctx, p, nil, zkclient.CreateOptions{}); err != nil && !errors.Is(err, zkproto.ErrNodeExists) {
			return keeperError(err, p)
		}
	}
	return nil
}

// readQuota reads and parses a limits or stats node.
func (s *shell) readQuota(path string) (datatree.StatsTrack, error) {
	data, _, err := s.conn.Get(s.ctx, path, false)
	if err != nil {
		return datatree.StatsTrack{}, keeperError(err, path)
	}
	st, err := datatree.ParseStatsTrack(data)
	if err != nil {
		return datatree.StatsTrack{}, &cliError{msg: fmt.Sprintf("%s: %v", path, err)}
	}
	return st, nil
}

// warnQuota prints SetQuotaCommand's warnings about limits below the
// current usage.
func (s *shell) warnQuota(limits, stats datatree.StatsTrack) {
	below := func(soft, hard, used int64) bool { return (soft > -1 && soft < used) || (hard > -1 && hard < used) }
	if below(limits.Count(), limits.CountHardLimit(), stats.Count()) {
		s.outf("[Warning]: the count quota you create is less than the existing count:%d\n", stats.Count())
	}
	if below(limits.Bytes(), limits.ByteHardLimit(), stats.Bytes()) {
		s.outf("[Warning]: the bytes quota you create is less than the existing bytes:%d\n", stats.Bytes())
	}
}

// quotaChildCheck refuses a quota above an existing one: it walks the
// quota directory of path as ZKUtil.visitSubTreeDFS does and names the
// first node below it that has a zookeeper_limits child.
func (s *shell) quotaChildCheck(path string) error {
	root := datatree.QuotaPath + path
	if err := checkPath(root, false); err != nil {
		return err
	}
	err := s.visitTree(root, false, func(p string) error {
		kids, _, err := s.conn.Children(s.ctx, p, false)
		if err != nil {
			return nil // gone meanwhile, or unreadable: zkCli goes on
		}
		if p != root && slices.Contains(kids, datatree.QuotaLimitNode) {
			return &cliError{msg: fmt.Sprintf("%s has a child %s which has a quota", path, p[len(datatree.QuotaPath):])}
		}
		return nil
	})
	if isNoNode(err) {
		return nil // no quota directory: nothing below it
	}
	return err
}

// isNoNode reports whether err is keeperError's rendering of NoNode.
func isNoNode(err error) bool {
	var ce *cliError
	return errors.As(err, &ce) && strings.HasPrefix(ce.msg, "Node does not exist: ")
}

// quotaParentCheck refuses a quota below an existing one: it looks at the
// quota directory of each proper ancestor of path, top down, and stops at
// the first that is missing or empty.
func (s *shell) quotaParentCheck(path string) error {
	names := javaSplitSlash(path)
	dir := datatree.QuotaPath
	for i := 1; i < len(names)-1; i++ {
		dir += "/" + names[i]
		kids, _, err := s.conn.Children(s.ctx, dir, false)
		switch {
		case errors.Is(err, zkproto.ErrNoNode):
			return nil
		case err != nil:
			return keeperError(err, dir)
		case len(kids) == 0:
			return nil
		case slices.Contains(kids, datatree.QuotaLimitNode):
			return &cliError{msg: fmt.Sprintf("%s has a parent %s which has a quota", path, dir[len(datatree.QuotaPath):])}
		}
	}
	return nil
}

// javaSplitSlash is Java's path.split("/"): a leading empty name for the
// leading slash, trailing empty names dropped.
func javaSplitSlash(path string) []string {
	parts := strings.Split(path, "/")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// listQuota is zkCli's listquota.
func (s *shell) listQuota(_ flagSet, args []string) error {
	if len(args) < 1 {
		return errUsage
	}
	path := args[0]
	limitPath := datatree.QuotaLimitPath(path)
	s.errf("absolute path is %s\n", limitPath)
	if err := checkPath(limitPath, false); err != nil {
		return err
	}
	var lines []string
	for i, p := range []string{limitPath, datatree.QuotaStatPath(path)} {
		data, _, err := s.conn.Get(s.ctx, p, false)
		if errors.Is(err, zkproto.ErrNoNode) {
			s.errf("quota for %s does not exist.\n", path)
			return nil
		} else if err != nil {
			return keeperError(err, p)
		}
		st, err := datatree.ParseStatsTrack(data)
		if err != nil {
			return &cliError{msg: fmt.Sprintf("%s: %v", p, err)}
		}
		what := "quota"
		if i == 1 {
			what = "stat"
		}
		lines = append(lines, fmt.Sprintf("Output %s for %s %s\n", what, path, st))
	}
	for _, l := range lines {
		s.outf("%s", l)
	}
	return nil
}

// delQuota is zkCli's delquota: with a limit option it resets that limit
// to -1; without one it deletes the quota's nodes and then every quota
// directory above them that is left empty.
func (s *shell) delQuota(f flagSet, args []string) error {
	opt, some, err := quotaOption(s.tokens, f)
	if err != nil {
		return err
	}
	if len(args) < 1 {
		return errUsage
	}
	path := args[0]
	dir, limitPath := datatree.QuotaPath+path, datatree.QuotaLimitPath(path)
	if err := checkPath(limitPath, false); err != nil {
		return err
	}
	if _, ok, err := s.conn.Exists(s.ctx, limitPath, false); err != nil {
		return keeperError(err, limitPath)
	} else if !ok {
		s.outf("Quota does not exist for %s\n", path)
		return nil
	}
	limits, err := s.readQuota(limitPath)
	if isNoNode(err) {
		s.errf("quota for %s does not exist.\n", path)
		return nil
	} else if err != nil {
		return err
	}
	if some {
		limits.Set(quotaFlagKeys[opt], -1)
		_, err := s.conn.Set(s.ctx, limitPath, []byte(limits.String()), -1)
		return keeperError(err, limitPath)
	}
	kids, _, err := s.conn.Children(s.ctx, dir, false)
	if err != nil {
		return keeperError(err, dir)
	}
	slices.Sort(kids)
	for _, k := range kids {
		if err := s.conn.Delete(s.ctx, dir+"/"+k, -1); err != nil {
			return keeperError(err, dir+"/"+k)
		}
	}
	return s.trimQuotaDirs(dir)
}

// trimQuotaDirs deletes dir and its ancestors below /zookeeper/quota while
// they have no children (DelQuotaCommand.trimProcQuotas).
func (s *shell) trimQuotaDirs(dir string) error {
	for dir != datatree.QuotaPath {
		kids, _, err := s.conn.Children(s.ctx, dir, false)
		if err != nil {
			return keeperError(err, dir)
		}
		if len(kids) > 0 {
			return nil
		}
		if err := s.conn.Delete(s.ctx, dir, -1); err != nil {
			return keeperError(err, dir)
		}
		dir = dir[:strings.LastIndexByte(dir, '/')]
	}
	return nil
}
