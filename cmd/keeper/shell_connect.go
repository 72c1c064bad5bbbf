package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
)

// This file is how the shell reaches a server: zkCli's connect string
// (host:port[,host:port...][/chroot]) and the chroot, which the shell
// applies to every path it sends and strips from every path it receives,
// as the Java client does.

// defaultClientPort is the port of a connect-string host without one.
const defaultClientPort = "2181"

// connectString is a parsed connect string.
type connectString struct {
	hosts  []string // host:port, in the order given
	chroot string   // "" for none; otherwise a valid path other than "/"
}

// parseConnectString parses s as the Java client's ConnectStringParser
// does: the chroot starts at the first '/', a host without a port gets
// 2181, and "/" alone means no chroot.
func parseConnectString(s string) (connectString, error) {
	var cs connectString
	hostPart := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hostPart, cs.chroot = s[:i], s[i:]
		if cs.chroot == "/" {
			cs.chroot = ""
		} else if err := checkPath(cs.chroot, false); err != nil {
			return connectString{}, fmt.Errorf("connect string %q: chroot: %v", s, err)
		}
	}
	for _, h := range strings.Split(hostPart, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), defaultClientPort)
		}
		cs.hosts = append(cs.hosts, h)
	}
	if len(cs.hosts) == 0 {
		return connectString{}, fmt.Errorf("connect string %q names no server (want host:port[,host:port...][/chroot])", s)
	}
	return cs, nil
}

// dialAny connects to the first host of cs that answers, trying them in
// the order given (the Java client shuffles them; a fixed order keeps a
// session's server predictable). Each attempt may take timeout divided by
// the number of hosts, as the Java client divides its connect timeout,
// and at least a second.
func dialAny(ctx context.Context, cs connectString, o shellOptions) (*zkConn, error) {
	per := max(o.timeout/time.Duration(len(cs.hosts)), time.Second)
	opts := zkclient.Options{SessionTimeout: o.timeout, ReadOnly: o.readOnly}
	o.security.Apply(&opts)
	var errs []error
	for _, h := range cs.hosts {
		dialCtx, cancel := context.WithTimeout(ctx, per)
		c, err := zkclient.Dial(dialCtx, h, opts)
		cancel()
		if err == nil {
			return &zkConn{Conn: c, chroot: cs.chroot}, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", h, dialReason(err)))
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 1 {
		return nil, errors.Unwrap(errs[0]) // the caller names the one host
	}
	return nil, errors.Join(errs...)
}

// zkConn is a client connection seen through a chroot: the methods the
// shell uses take and return paths relative to it. The embedded Conn's
// other methods (Err, Close, Events, ReadOnly, Do) pass through; Events
// carry server paths, which rel turns into the shell's.
type zkConn struct {
	*zkclient.Conn
	chroot  string         // "" for none
	watches map[string]int // server path -> watch kinds set by this session (watchData, ...)
}

// abs is the server's path for the shell's path p.
func (c *zkConn) abs(p string) string {
	switch {
	case c.chroot == "":
		return p
	case p == "/":
		return c.chroot
	}
	return c.chroot + p
}

// rel is the shell's path for the server's path p; a path outside the
// chroot is left as it is.
func (c *zkConn) rel(p string) string {
	switch {
	case c.chroot == "":
		return p
	case p == c.chroot:
		return "/"
	case strings.HasPrefix(p, c.chroot+"/"):
		return p[len(c.chroot):]
	}
	return p
}

// relErr rewrites the path of a server error to the shell's.
func (c *zkConn) relErr(err error) error {
	var zerr *zkproto.Error
	if c.chroot == "" || !errors.As(err, &zerr) || zerr.Path == "" {
		return err
	}
	return &zkproto.Error{Code: zerr.Code, Path: c.rel(zerr.Path)}
}

func (c *zkConn) Create(ctx context.Context, path string, data []byte, opts zkclient.CreateOptions) (string, zkproto.Stat, error) {
	p, st, err := c.Conn.Create(ctx, c.abs(path), data, opts)
	return c.rel(p), st, c.relErr(err)
}

func (c *zkConn) Delete(ctx context.Context, path string, version int32) error {
	return c.relErr(c.Conn.Delete(ctx, c.abs(path), version))
}

func (c *zkConn) Exists(ctx context.Context, path string, watch bool) (zkproto.Stat, bool, error) {
	st, ok, err := c.Conn.Exists(ctx, c.abs(path), watch)
	if watch && err == nil {
		c.watchSet(c.abs(path), watchData) // a missing node's watch waits for its creation
	}
	return st, ok, c.relErr(err)
}

func (c *zkConn) Get(ctx context.Context, path string, watch bool) ([]byte, zkproto.Stat, error) {
	data, st, err := c.Conn.Get(ctx, c.abs(path), watch)
	if watch && err == nil {
		c.watchSet(c.abs(path), watchData)
	}
	return data, st, c.relErr(err)
}

func (c *zkConn) Set(ctx context.Context, path string, data []byte, version int32) (zkproto.Stat, error) {
	st, err := c.Conn.Set(ctx, c.abs(path), data, version)
	return st, c.relErr(err)
}

func (c *zkConn) GetACL(ctx context.Context, path string) ([]zkproto.ACL, zkproto.Stat, error) {
	acl, st, err := c.Conn.GetACL(ctx, c.abs(path))
	return acl, st, c.relErr(err)
}

func (c *zkConn) SetACL(ctx context.Context, path string, acl []zkproto.ACL, version int32) (zkproto.Stat, error) {
	st, err := c.Conn.SetACL(ctx, c.abs(path), acl, version)
	return st, c.relErr(err)
}

func (c *zkConn) Children(ctx context.Context, path string, watch bool) ([]string, zkproto.Stat, error) {
	kids, st, err := c.Conn.Children(ctx, c.abs(path), watch)
	if watch && err == nil {
		c.watchSet(c.abs(path), watchChild)
	}
	return kids, st, c.relErr(err)
}

func (c *zkConn) Sync(ctx context.Context, path string) (string, error) {
	p, err := c.Conn.Sync(ctx, c.abs(path))
	return c.rel(p), c.relErr(err)
}

func (c *zkConn) AddWatch(ctx context.Context, path string, mode int32) error {
	err := c.Conn.AddWatch(ctx, c.abs(path), mode)
	if err == nil {
		c.watchSet(c.abs(path), watchPersistent)
	}
	return c.relErr(err)
}

func (c *zkConn) GetAllChildrenNumber(ctx context.Context, path string) (int32, error) {
	n, err := c.Conn.GetAllChildrenNumber(ctx, c.abs(path))
	return n, c.relErr(err)
}

func (c *zkConn) GetEphemerals(ctx context.Context, prefix string) ([]string, error) {
	if c.chroot != "" && prefix == "/" {
		prefix = c.chroot + "/" // the chroot node itself is not below it
	} else {
		prefix = c.abs(prefix)
	}
	eph, err := c.Conn.GetEphemerals(ctx, prefix)
	for i := range eph {
		eph[i] = c.rel(eph[i])
	}
	return eph, c.relErr(err)
}

// RemoveWatches removes this session's watches of type typ on path.
func (c *zkConn) RemoveWatches(ctx context.Context, path string, typ zkproto.WatcherType) error {
	_, _, err := c.Conn.Do(ctx, zkproto.OpRemoveWatches, &zkproto.RemoveWatchesRequest{Path: c.abs(path), Type: typ})
	return c.relErr(err)
}

// Multi runs ops with their paths put under the chroot.
func (c *zkConn) Multi(ctx context.Context, ops ...zkproto.MultiOp) ([]zkproto.MultiResult, error) {
	if c.chroot != "" {
		ops = append([]zkproto.MultiOp(nil), ops...)
		for i, op := range ops {
			ops[i].Record = c.absRecord(op.Record)
		}
	}
	res, err := c.Conn.Multi(ctx, ops...)
	return res, c.relErr(err)
}

// absRecord returns a copy of a multi op's request with its path under
// the chroot.
func (c *zkConn) absRecord(r jute.Record) jute.Record {
	switch r := r.(type) {
	case *zkproto.CreateRequest:
		cp := *r
		cp.Path = c.abs(r.Path)
		return &cp
	case *zkproto.CreateTTLRequest:
		cp := *r
		cp.Path = c.abs(r.Path)
		return &cp
	case *zkproto.DeleteRequest:
		cp := *r
		cp.Path = c.abs(r.Path)
		return &cp
	case *zkproto.SetDataRequest:
		cp := *r
		cp.Path = c.abs(r.Path)
		return &cp
	case *zkproto.CheckVersionRequest:
		cp := *r
		cp.Path = c.abs(r.Path)
		return &cp
	}
	return r
}

// authInfo is an addauth of the session, sent again on a new connection
// after a failover, as the Java client sends its auth info again.
type authInfo struct {
	scheme string
	auth   []byte
}

// failoverIfLost moves the session to a server of the connect string once
// its connection broke, as the Java client does: each host once, starting
// after the one that failed, reattaching to the same session. It prints
// SyncConnected once reattached, or Expired if the servers no longer have
// the session (the shell is then unconnected, as zkCli is). If no server
// answers, the session stays disconnected and the next command tries
// again. The session's watches that have not fired are set again on the
// new connection (SetWatches), and fire at once if their node changed
// while the session had no connection.
func (s *shell) failoverIfLost() {
	old := s.conn
	if old == nil || s.closed || !errors.Is(old.Err(), zkclient.ErrConnectionLoss) {
		return
	}
	cs, err := parseConnectString(s.server)
	if err != nil {
		return
	}
	hosts := rotateAfter(cs.hosts, old.Addr())
	per := max(s.opts.timeout/time.Duration(len(hosts)), time.Second)
	watches := old.Watches()
	opts := zkclient.Options{SessionTimeout: s.opts.timeout, ReadOnly: s.opts.readOnly,
		SessionID: old.SessionID(), SessionPasswd: old.SessionPasswd(), LastZxidSeen: old.LastZxid(),
		Watches: &watches}
	s.opts.security.Apply(&opts)
	for _, h := range hosts {
		ctx, cancel := context.WithTimeout(s.ctx, per)
		c, err := zkclient.Dial(ctx, h, opts)
		cancel()
		switch {
		case errors.Is(err, zkproto.ErrSessionExpired):
			s.conn, s.events = nil, nil
			s.printWatch("Expired", "None", "")
			return
		case err != nil:
			continue
		}
		for _, a := range s.auths {
			if err := c.AddAuth(s.ctx, a.scheme, a.auth); err != nil {
				s.errf("addauth %s after reconnecting: %v\n", a.scheme, keeperError(err, ""))
			}
		}
		s.attach(&zkConn{Conn: c, chroot: old.chroot, watches: old.watches})
		s.printWatch("SyncConnected", "None", "")
		return
	}
}

// rotateAfter returns hosts starting after addr, addr last; hosts as they
// are if addr is not among them.
func rotateAfter(hosts []string, addr string) []string {
	for i, h := range hosts {
		if h == addr {
			return append(append([]string(nil), hosts[i+1:]...), hosts[:i+1]...)
		}
	}
	return hosts
}
