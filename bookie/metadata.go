package bookie

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/proto"

	"keeper/bkproto"
)

// Znode names under the ledgers root (spec §5.2).
const (
	availableNode  = "available"
	readOnlyNode   = "readonly"
	cookiesNode    = "cookies"
	instanceIDNode = "INSTANCEID"
	layoutNode     = "LAYOUT"
)

// ledgerLayout is what `bookkeeper shell metaformat` stores in LAYOUT:
// the layout format version, then the ledger manager factory and its
// version. keeper's paths are the hierarchical manager's.
const ledgerLayout = "2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1"

// registry is the bookie's view of the metadata store: cookies, the
// cluster instance id, registration znodes and the ledger listing for GC.
// It is safe for concurrent use.
type registry struct {
	conn    *zk.Conn
	root    string
	id      string
	timeout time.Duration // the session timeout
	log     *slog.Logger
	acl     []zk.ACL

	mu         sync.Mutex // serializes registration changes; guards below
	data       []byte     // registration znode data
	registered bool
	readOnly   bool
	expired    bool // the session expired since the last registration
	closed     bool
}

// zkLogger sends go-zookeeper's log lines to slog at debug level.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("zookeeper client", "msg", fmt.Sprintf(format, args...))
}

// dialRegistry connects to the metadata store and waits for a session.
func dialRegistry(ctx context.Context, cfg Config, id string) (*registry, error) {
	r := &registry{root: cfg.LedgersRoot, id: id, timeout: cfg.ZKSessionTimeout, log: cfg.Logger,
		acl: zk.WorldACL(zk.PermAll)}
	conn, events, err := zk.Connect(cfg.MetadataServers, cfg.ZKSessionTimeout, zk.WithLogger(zkLogger{cfg.Logger}))
	if err != nil {
		return nil, fmt.Errorf("bookie: connect to %s: %w", strings.Join(cfg.MetadataServers, ","), err)
	}
	r.conn = conn
	established := make(chan struct{})
	go r.watchSession(events, established)
	wait := time.NewTimer(max(cfg.ZKSessionTimeout, 10*time.Second))
	defer wait.Stop()
	select {
	case <-established:
		return r, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-wait.C:
		err = errors.New("no session established")
	}
	conn.Close()
	return nil, fmt.Errorf("bookie: connect to %s: %w", strings.Join(cfg.MetadataServers, ","), err)
}

// watchSession follows the session's state: it signals established once,
// and after an expiry re-registers the bookie on the new session (the
// old session's ephemeral znodes are gone). It runs until the connection
// is closed.
func (r *registry) watchSession(events <-chan zk.Event, established chan struct{}) {
	once := sync.Once{}
	for ev := range events {
		if ev.Type != zk.EventSession {
			continue
		}
		switch ev.State {
		case zk.StateHasSession:
			once.Do(func() { close(established) })
			r.mu.Lock()
			again := r.expired && r.registered && !r.closed
			r.expired = false
			r.mu.Unlock()
			if again {
				r.log.Warn("metadata session expired; registering again")
				if err := r.setMode(r.currentMode()); err != nil {
					r.log.Error("registration after session expiry failed", "err", err)
				}
			}
		case zk.StateExpired:
			r.mu.Lock()
			r.expired = true
			r.mu.Unlock()
		}
	}
}

func (r *registry) currentMode() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.readOnly
}

// close ends the session, which removes the registration znode.
func (r *registry) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.conn.Close()
}

// children implements childLister.
func (r *registry) children(path string) ([]string, error) {
	kids, _, err := r.conn.Children(path)
	return kids, err
}

// ledgerExists reports whether a ledger's metadata znode exists.
func (r *registry) ledgerExists(ledgerID int64) (bool, error) {
	ok, _, err := r.conn.Exists(LedgerPath(r.root, ledgerID))
	return ok, err
}

// ensureLayout makes sure the ledgers tree exists, creating it as
// `bookkeeper shell metaformat` would if the root is missing (the root,
// available, available/readonly, INSTANCEID with a new UUID, LAYOUT), and
// returns the cluster instance id ("" if the tree has no INSTANCEID, which
// BookKeeper then leaves out of cookies).
func (r *registry) ensureLayout() (string, error) {
	exists, _, err := r.conn.Exists(r.root)
	if err != nil {
		return "", fmt.Errorf("bookie: check %s: %w", r.root, err)
	}
	if !exists {
		if err := r.format(); err != nil {
			return "", err
		}
	}
	for _, p := range []string{r.root + "/" + availableNode, r.readOnlyDir()} {
		if err := r.createIfAbsent(p, nil); err != nil {
			return "", err
		}
	}
	data, _, err := r.conn.Get(r.root + "/" + instanceIDNode)
	if errors.Is(err, zk.ErrNoNode) {
		r.log.Warn("the ledgers tree has no INSTANCEID; cookies will not name a cluster", "root", r.root)
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("bookie: read %s/%s: %w", r.root, instanceIDNode, err)
	}
	return string(data), nil
}

// format creates a new cluster's ledgers tree in one multi-op, after the
// root's parents.
func (r *registry) format() error {
	parts := strings.Split(strings.TrimPrefix(r.root, "/"), "/")
	for i := 1; i < len(parts); i++ {
		if err := r.createIfAbsent("/"+strings.Join(parts[:i], "/"), nil); err != nil {
			return err
		}
	}
	id, err := newUUID()
	if err != nil {
		return err
	}
	ops := []any{
		&zk.CreateRequest{Path: r.root, Data: []byte{}, Acl: r.acl},
		&zk.CreateRequest{Path: r.root + "/" + availableNode, Data: []byte{}, Acl: r.acl},
		&zk.CreateRequest{Path: r.readOnlyDir(), Data: []byte{}, Acl: r.acl},
		&zk.CreateRequest{Path: r.root + "/" + instanceIDNode, Data: []byte(id), Acl: r.acl},
		&zk.CreateRequest{Path: r.root + "/" + layoutNode, Data: []byte(ledgerLayout), Acl: r.acl},
	}
	if _, err := r.conn.Multi(ops...); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("bookie: format %s: %w", r.root, err)
	}
	r.log.Info("created the ledgers tree", "root", r.root, "instanceId", id)
	return nil
}

// newUUID returns a random (version 4) UUID string, as Java's
// UUID.randomUUID().toString() formats it.
func newUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("bookie: instance id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

func (r *registry) createIfAbsent(path string, data []byte) error {
	_, err := r.conn.Create(path, data, 0, r.acl)
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("bookie: create %s: %w", path, err)
	}
	return nil
}

func (r *registry) readOnlyDir() string { return r.root + "/" + availableNode + "/" + readOnlyNode }

func (r *registry) cookiePath() string { return r.root + "/" + cookiesNode + "/" + r.id }

// readCookie implements cookieStore.
func (r *registry) readCookie() ([]byte, bool, error) {
	data, _, err := r.conn.Get(r.cookiePath())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("bookie: read %s: %w", r.cookiePath(), err)
	}
	return data, true, nil
}

// createCookie implements cookieStore.
func (r *registry) createCookie(data []byte) error {
	if err := r.createIfAbsent(r.root+"/"+cookiesNode, nil); err != nil {
		return err
	}
	if _, err := r.conn.Create(r.cookiePath(), data, 0, r.acl); err != nil {
		return fmt.Errorf("bookie: create %s: %w", r.cookiePath(), err)
	}
	return nil
}

// registrationData is the registration znode's content, as BookKeeper
// 4.12 and later write it: a BookieServiceInfoFormat protobuf (binary)
// with one "bookie-rpc" endpoint, plus an "http" one for metrics.
func registrationData(addr, metricsAddr string) ([]byte, error) {
	info := &bkproto.BookieServiceInfoFormat{Properties: map[string]string{}}
	add := func(id, protocol, hostport string) error {
		host, portStr, err := net.SplitHostPort(hostport)
		if err != nil {
			return err
		}
		port, err := strconv.Atoi(portStr)
		if err != nil {
			return err
		}
		info.Endpoints = append(info.Endpoints, &bkproto.BookieServiceInfoFormat_Endpoint{
			Id: proto.String(id), Port: proto.Int32(int32(port)), Host: proto.String(host), Protocol: proto.String(protocol),
		})
		return nil
	}
	if err := add("bookie", "bookie-rpc", addr); err != nil {
		return nil, fmt.Errorf("bookie: registration endpoint %q: %w", addr, err)
	}
	if metricsAddr != "" {
		if err := add("httpserver", "http", metricsAddr); err != nil {
			return nil, fmt.Errorf("bookie: metrics endpoint %q: %w", metricsAddr, err)
		}
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(info)
}

// register publishes the bookie for the first time, in the mode the last
// setMode call asked for (writable if none did).
func (r *registry) register(data []byte) error {
	r.mu.Lock()
	r.data = data
	r.registered = true
	readOnly := r.readOnly
	r.mu.Unlock()
	return r.setMode(readOnly)
}

// setMode moves the registration to /available/<id> (writable) or
// /available/readonly/<id>: it creates the new znode first, then deletes
// the old one, as BookKeeper does, so the bookie is never missing from
// both.
func (r *registry) setMode(readOnly bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || !r.registered {
		r.readOnly = readOnly
		return nil
	}
	writable := r.root + "/" + availableNode + "/" + r.id
	ro := r.readOnlyDir() + "/" + r.id
	from, to := ro, writable
	if readOnly {
		from, to = writable, ro
	}
	if err := r.createEphemeral(to); err != nil {
		return err
	}
	if err := r.deleteOwn(from); err != nil {
		return err
	}
	r.readOnly = readOnly
	r.log.Info("registered", "znode", to)
	return nil
}

// createEphemeral creates the registration znode. If one exists from an
// earlier session (a bookie that crashed), it waits for that session to
// expire, up to twice the session timeout, as BookKeeper waits; a znode
// that outlives that belongs to a live process with the same bookie id.
func (r *registry) createEphemeral(path string) error {
	deadline := time.NewTimer(2 * r.timeout)
	defer deadline.Stop()
	for {
		_, err := r.conn.Create(path, r.data, zk.FlagEphemeral, r.acl)
		if err == nil {
			return nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("bookie: register %s: %w", path, err)
		}
		exists, stat, watch, err := r.conn.ExistsW(path)
		if err != nil {
			return fmt.Errorf("bookie: register %s: %w", path, err)
		}
		if !exists {
			continue
		}
		if stat.EphemeralOwner == r.conn.SessionID() {
			_, err := r.conn.Set(path, r.data, -1)
			return err
		}
		r.log.Info("registration znode of an earlier session exists; waiting for it to expire",
			"znode", path, "owner", fmt.Sprintf("%#x", stat.EphemeralOwner))
		select {
		case <-watch:
		case <-deadline.C:
			return fmt.Errorf("bookie: register %s: the znode is held by session %#x, which did not expire "+
				"within %v: is another bookie running with id %s?", path, stat.EphemeralOwner, 2*r.timeout, r.id)
		}
	}
}

// deleteOwn deletes path if it exists and this session owns it.
func (r *registry) deleteOwn(path string) error {
	exists, stat, err := r.conn.Exists(path)
	if err != nil {
		return fmt.Errorf("bookie: check %s: %w", path, err)
	}
	if !exists || stat.EphemeralOwner != r.conn.SessionID() {
		return nil
	}
	if err := r.conn.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("bookie: unregister %s: %w", path, err)
	}
	return nil
}
