package metadata

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
)

// ErrRegistrationHeld means a bookie's registration znode belongs to a
// session that did not end within the wait: most likely another live
// process runs with the same bookie id.
var ErrRegistrationHeld = errors.New("metadata: the registration znode is held by another session")

// errRegistrationClosed refuses Register after Close.
var errRegistrationClosed = errors.New("metadata: registration closed")

// httpProtocol is the registration endpoint protocol of a bookie's HTTP
// server (metrics).
const httpProtocol = "http"

// RegistrationData returns a bookie's registration znode content as
// BookKeeper 4.12 and later write it, the format ServiceAddress reads: a
// BookieServiceInfoFormat protobuf (binary, deterministic) with a
// "bookie-rpc" endpoint (id "bookie") at rpcAddr and, if httpAddr is not
// "", an "http" endpoint (id "httpserver") there; the properties map is
// empty. Both addresses are host:port.
func RegistrationData(rpcAddr, httpAddr string) ([]byte, error) {
	info := &bkproto.BookieServiceInfoFormat{Properties: map[string]string{}}
	add := func(id, protocol, hostport string) error {
		host, portStr, err := net.SplitHostPort(hostport)
		if err != nil {
			return fmt.Errorf("metadata: %s endpoint %q: %w", protocol, hostport, err)
		}
		port, err := strconv.Atoi(portStr)
		if err != nil || port <= 0 || port > 65535 || host == "" {
			return fmt.Errorf("metadata: %s endpoint %q: want host:port with a port in 1..65535", protocol, hostport)
		}
		info.Endpoints = append(info.Endpoints, &bkproto.BookieServiceInfoFormat_Endpoint{
			Id: proto.String(id), Port: proto.Int32(int32(port)), Host: proto.String(host), Protocol: proto.String(protocol),
		})
		return nil
	}
	if err := add("bookie", bookieRPCProtocol, rpcAddr); err != nil {
		return nil, err
	}
	if httpAddr != "" {
		if err := add("httpserver", httpProtocol, httpAddr); err != nil {
			return nil, err
		}
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(info)
}

// RegistrationConfig describes a bookie's registration.
type RegistrationConfig struct {
	// ID is the bookie id: the registration znode's name.
	ID ledger.BookieID
	// Data is the znode's content (RegistrationData).
	Data []byte
	// ReadOnly is the mode to register in until SetReadOnly says otherwise.
	ReadOnly bool
	// StaleWait bounds how long registering waits for a znode left by an
	// earlier session (a crashed process of this bookie) to go when that
	// session expires; 0 means twice DefaultSessionTimeout. BookKeeper
	// waits one session timeout; twice leaves room for the server's
	// expiry tick.
	StaleWait time.Duration
}

// Registration publishes a bookie in the registry (docs/bookkeeper-protocol.md §8.1): an
// ephemeral znode root/available/<id> while writable, or
// root/available/readonly/<id> while read-only, holding the registration
// data. It moves between the two by creating the new znode before deleting
// the old one, so the bookie is never missing from both (readers may
// briefly see it in both).
//
// Once registered, a goroutine keeps a watch on the znode. If it goes (the
// session expired, and the client opened a new one; or someone deleted it),
// the registration is made again on the current session (BookKeeper's bookie
// shuts down instead). A move that failed is retried the same way. Close
// ends this and deletes the znode.
//
// A Registration is safe for concurrent use. Changes are serialized: one
// that has to wait for a stale znode holds up the others.
type Registration struct {
	s         *Store
	id        ledger.BookieID
	data      []byte
	staleWait time.Duration

	kick chan struct{} // cap 1: the keeper goroutine should reconcile now
	done chan struct{} // closed when the keeper goroutine ends

	mu         sync.Mutex // serializes changes to the znodes; guards the fields below
	readOnly   bool       // the mode wanted (the znode is there once a change succeeds)
	registered bool       // Register succeeded
	closed     bool
	stop       context.CancelFunc // ends the keeper goroutine
}

// NewRegistration returns a bookie's registration, not yet published:
// Register publishes it.
func (s *Store) NewRegistration(cfg RegistrationConfig) (*Registration, error) {
	if err := cfg.ID.Validate(); err != nil {
		return nil, err
	}
	if cfg.StaleWait < 0 {
		return nil, fmt.Errorf("metadata: negative stale znode wait %v", cfg.StaleWait)
	}
	r := &Registration{s: s, id: cfg.ID, data: cfg.Data, staleWait: cfg.StaleWait,
		readOnly: cfg.ReadOnly, kick: make(chan struct{}, 1), done: make(chan struct{})}
	if r.staleWait == 0 {
		r.staleWait = 2 * DefaultSessionTimeout
	}
	return r, nil
}

// znode returns the registration znode of a mode.
func (r *Registration) znode(readOnly bool) string {
	if readOnly {
		return r.s.readOnlyPath() + "/" + string(r.id)
	}
	return r.s.availablePath() + "/" + string(r.id)
}

// Path returns the znode of the mode last asked for.
func (r *Registration) Path() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.znode(r.readOnly)
}

// ReadOnly reports the mode last asked for.
func (r *Registration) ReadOnly() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.readOnly
}

// Register publishes the bookie in its current mode and starts watching
// the znode. A znode of the same name left by an earlier session is
// waited out (up to StaleWait, then ErrRegistrationHeld); one of this
// session is taken over and its data replaced. Registering again is a
// no-op.
func (r *Registration) Register(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return errRegistrationClosed
	case r.registered:
		return nil
	}
	if err := r.reconcileLocked(ctx); err != nil {
		return err
	}
	keepCtx, stop := context.WithCancel(context.Background())
	if !r.s.startWatch(keepCtx, r.keep) {
		stop()
		return fmt.Errorf("metadata: register %s: the store is closed", r.id)
	}
	r.registered, r.stop = true, stop
	r.s.log.Info("bookie registered", "znode", r.znode(r.readOnly))
	return nil
}

// SetReadOnly moves the registration to the read-only directory (true) or
// back (false). Before Register it only sets the mode to register in. If
// the move fails, the error is returned and the mode still counts as asked
// for: the keeper goroutine retries the move.
func (r *Registration) SetReadOnly(ctx context.Context, readOnly bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.readOnly == readOnly {
		return nil
	}
	r.readOnly = readOnly
	if !r.registered || r.closed {
		return nil
	}
	if err := r.reconcileLocked(ctx); err != nil {
		select {
		case r.kick <- struct{}{}:
		default:
		}
		return err
	}
	r.s.log.Info("bookie registration moved", "znode", r.znode(readOnly))
	return nil
}

// Close stops watching the registration and deletes its znode (if this
// session still holds it). The znode goes with the session anyway; Close
// makes readers see the bookie leave at once.
func (r *Registration) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	registered, stop := r.registered, r.stop
	r.mu.Unlock()
	if !registered {
		return nil
	}
	stop()
	<-r.done
	return errors.Join(r.deleteOwn(ctx, r.znode(false)), r.deleteOwn(ctx, r.znode(true)))
}

// reconcileLocked makes the znodes match the mode: the wanted one exists
// and is this session's, with the registration data; the other one, if
// this session holds it, is deleted. The caller holds mu.
func (r *Registration) reconcileLocked(ctx context.Context) error {
	if err := r.createEphemeral(ctx, r.znode(r.readOnly)); err != nil {
		return err
	}
	return r.deleteOwn(ctx, r.znode(!r.readOnly))
}

// createEphemeral creates the registration znode at path. If it exists
// and is this session's, its data is brought up to date. If an earlier
// session holds it, createEphemeral waits for that session to end (the
// server then deletes the znode), up to staleWait.
func (r *Registration) createEphemeral(ctx context.Context, path string) error {
	deadline := time.NewTimer(r.staleWait)
	defer deadline.Stop()
	for {
		_, _, err := r.s.conn.Create(ctx, path, r.data, zkclient.CreateOptions{Flags: zkproto.FlagEphemeral, ACL: r.s.acl})
		if err == nil {
			return nil
		}
		if !errors.Is(err, zkproto.ErrNodeExists) {
			return fmt.Errorf("metadata: register %s: %w", path, err)
		}
		stat, ok, ev, err := r.s.conn.ExistsW(ctx, path)
		switch {
		case err != nil:
			return fmt.Errorf("metadata: register %s: %w", path, err)
		case !ok:
			continue // gone between the calls; the watch fires on our create and is dropped
		case stat.EphemeralOwner == r.s.conn.SessionID():
			if _, err := r.s.conn.Set(ctx, path, r.data, -1); err != nil {
				return fmt.Errorf("metadata: register %s: %w", path, err)
			}
			return nil
		}
		r.s.log.Info("a registration znode of an earlier session exists; waiting for it to expire",
			"znode", path, "owner", fmt.Sprintf("%#x", stat.EphemeralOwner))
		select {
		case <-ev:
		case <-deadline.C:
			return fmt.Errorf("%w: %s, by session %#x, for more than %v: is another bookie running with id %s?",
				ErrRegistrationHeld, path, stat.EphemeralOwner, r.staleWait, r.id)
		case <-ctx.Done():
			return fmt.Errorf("metadata: register %s: %w", path, ctx.Err())
		}
	}
}

// deleteOwn deletes path if it exists and this session holds it.
func (r *Registration) deleteOwn(ctx context.Context, path string) error {
	stat, ok, err := r.s.conn.Exists(ctx, path)
	if err != nil {
		return fmt.Errorf("metadata: unregister %s: %w", path, err)
	}
	if !ok || stat.EphemeralOwner != r.s.conn.SessionID() {
		return nil
	}
	err = r.s.conn.Delete(ctx, path, stat.Version)
	if err != nil && !errors.Is(err, zkproto.ErrNoNode) {
		return fmt.Errorf("metadata: unregister %s: %w", path, err)
	}
	return nil
}

// keep is the keeper goroutine: it watches the wanted znode and registers
// again whenever it is missing or not this session's (an expired session
// took it), and reconciles when a move failed. It ends with ctx (Close or
// the store's Close) or with the connection.
func (r *Registration) keep(ctx context.Context) {
	defer close(r.done)
	backoff := r.s.backoff
	reconcile := false
	for {
		var err error
		if reconcile {
			err = r.reconcile(ctx)
		}
		var own bool
		var ev <-chan zkproto.WatcherEvent
		if err == nil {
			own, ev, err = r.watchOwn(ctx, r.Path())
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			r.s.log.Warn("keeping the bookie registered failed; retrying", "bookie", r.id, "err", err)
			var ok bool
			if backoff, ok = r.s.pause(ctx, backoff); !ok {
				return
			}
			continue
		}
		backoff = r.s.backoff
		if reconcile = !own; reconcile {
			r.s.log.Warn("the registration znode is gone (an expired session?); registering again", "bookie", r.id)
			continue
		}
		select {
		case e := <-ev:
			if sessionClosed(e) {
				return
			}
		case <-r.kick:
			reconcile = true
		case <-ctx.Done():
			return
		}
	}
}

// reconcile runs reconcileLocked unless the registration closed.
func (r *Registration) reconcile(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	return r.reconcileLocked(ctx)
}

// watchOwn reports whether path exists and this session holds it, and
// returns a watch that fires on its next change.
func (r *Registration) watchOwn(ctx context.Context, path string) (bool, <-chan zkproto.WatcherEvent, error) {
	stat, ok, ev, err := r.s.conn.ExistsW(ctx, path)
	if err != nil {
		return false, nil, fmt.Errorf("watch %s: %w", path, err)
	}
	return ok && stat.EphemeralOwner == r.s.conn.SessionID(), ev, nil
}
