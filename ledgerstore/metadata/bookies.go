package metadata

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"keeper/coordination/zkproto"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
)

// ErrBookieNotAvailable means a bookie has no registration znode: it is not
// running, or not yet registered.
var ErrBookieNotAvailable = errors.New("metadata: bookie not available")

// bookieRPCProtocol is the registration endpoint protocol of the bookie
// protocol itself.
const bookieRPCProtocol = "bookie-rpc"

// Registry is the set of live bookies: the children of root/available
// (writable) and of root/available/readonly (read-only), each sorted.
// A bookie moving between the two registers in the new place before it
// leaves the old one, so it may briefly appear in both.
type Registry struct {
	Writable []ledger.BookieID
	ReadOnly []ledger.BookieID
}

// Equal reports whether r and o list the same bookies.
func (r Registry) Equal(o Registry) bool {
	return slices.Equal(r.Writable, o.Writable) && slices.Equal(r.ReadOnly, o.ReadOnly)
}

func (s *Store) availablePath() string { return s.root + "/" + availableNode }
func (s *Store) readOnlyPath() string  { return s.root + "/" + availableNode + "/" + readOnlyNode }

// Bookies lists the registered bookies. A missing registration directory
// counts as empty.
func (s *Store) Bookies(ctx context.Context) (Registry, error) {
	var reg Registry
	for _, dir := range []struct {
		path string
		out  *[]ledger.BookieID
	}{{s.availablePath(), &reg.Writable}, {s.readOnlyPath(), &reg.ReadOnly}} {
		names, _, err := s.conn.Children(ctx, dir.path)
		if err != nil && !errors.Is(err, zkproto.ErrNoNode) {
			return Registry{}, fmt.Errorf("metadata: list bookies in %s: %w", dir.path, err)
		}
		*dir.out = s.bookieIDs(names)
	}
	return reg, nil
}

// bookieIDs turns registration znode names into sorted bookie ids. It
// skips the readonly directory and, with a warning, any name that is not a
// valid bookie id (BookKeeper would fail the whole listing; a watcher
// should not go blind over one stray znode).
func (s *Store) bookieIDs(names []string) []ledger.BookieID {
	ids := make([]ledger.BookieID, 0, len(names))
	for _, name := range names {
		if name == readOnlyNode {
			continue
		}
		if err := ledger.BookieID(name).Validate(); err != nil {
			s.log.Warn("ignoring a registration znode that names no bookie", "name", name, "err", err)
			continue
		}
		ids = append(ids, ledger.BookieID(name))
	}
	slices.Sort(ids)
	return ids
}

// WatchBookies follows the bookie registry. The channel first carries the
// current registry, then a new one after every change seen. It holds at
// most one undelivered registry, a newer one replacing it, so a slow reader
// skips intermediate states but always ends up with the current one.
// Consecutive registries differ. The channel closes when ctx is done, the
// store is closed, or the connection closes; lost connections and expired
// sessions are retried.
//
// Each ZooKeeper watch fires once, so after every event the loop re-arms
// the watch and lists the directory again, which catches changes made
// between the event and the re-arming. The two directories are listed one
// after the other, not atomically.
func (s *Store) WatchBookies(ctx context.Context) <-chan Registry {
	ch := make(chan Registry, 1)
	if !s.startWatch(ctx, func(ctx context.Context) { defer close(ch); s.watchBookies(ctx, ch) }) {
		close(ch)
	}
	return ch
}

func (s *Store) watchBookies(ctx context.Context, ch chan Registry) {
	var availEv, roEv <-chan zkproto.WatcherEvent // armed watches; nil once fired
	var last *Registry
	backoff := s.backoff
	for {
		var reg Registry
		var names []string
		var err error
		names, availEv, err = s.listWatch(ctx, s.availablePath(), availEv)
		if err == nil {
			reg.Writable = s.bookieIDs(names)
			names, roEv, err = s.listWatch(ctx, s.readOnlyPath(), roEv)
			reg.ReadOnly = s.bookieIDs(names)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Warn("bookie registry watch failed; retrying", "err", err)
			var ok bool
			if backoff, ok = s.pause(ctx, backoff); !ok {
				return
			}
			continue
		}
		backoff = s.backoff
		if last == nil || !last.Equal(reg) {
			last = &reg
			offer(ch, reg)
		}
		select {
		case ev := <-availEv:
			availEv = nil
			if sessionClosed(ev) {
				return
			}
		case ev := <-roEv:
			roEv = nil
			if sessionClosed(ev) {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// listWatch lists path's children and returns the watch that will report
// its next change. If armed is a watch on path that has not fired, it
// lists without arming another (the session would keep every duplicate
// until the path changes). A missing path lists as empty, watched for its
// creation.
func (s *Store) listWatch(ctx context.Context, path string, armed <-chan zkproto.WatcherEvent) ([]string, <-chan zkproto.WatcherEvent, error) {
	if armed != nil {
		names, _, err := s.conn.Children(ctx, path)
		if errors.Is(err, zkproto.ErrNoNode) {
			return nil, armed, nil
		}
		return names, armed, err
	}
	for range 3 { // the path may appear and vanish between the calls; a few rounds settle it
		names, _, ev, err := s.conn.ChildrenW(ctx, path)
		if !errors.Is(err, zkproto.ErrNoNode) {
			return names, ev, err
		}
		_, ok, ev, err := s.conn.ExistsW(ctx, path)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, ev, nil
		}
	}
	return nil, nil, fmt.Errorf("%s keeps appearing and disappearing", path)
}

// BookieAddress returns the host:port on which a registered bookie serves
// the bookie protocol, from its registration znode (writable first, then
// read-only): see ServiceAddress. An unregistered bookie gives
// ErrBookieNotAvailable.
func (s *Store) BookieAddress(ctx context.Context, id ledger.BookieID) (string, error) {
	if err := id.Validate(); err != nil {
		return "", err
	}
	for _, dir := range []string{s.availablePath(), s.readOnlyPath()} {
		p := dir + "/" + string(id)
		data, _, err := s.conn.Get(ctx, p)
		if errors.Is(err, zkproto.ErrNoNode) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("metadata: read %s: %w", p, err)
		}
		return ServiceAddress(id, data)
	}
	return "", fmt.Errorf("metadata: bookie %s: %w", id, ErrBookieNotAvailable)
}

// ServiceAddress returns the bookie protocol's host:port from a bookie's
// registration data. BookKeeper 4.12 and later register a
// BookieServiceInfoFormat protobuf whose "bookie-rpc" endpoint gives it;
// earlier bookies register no data, and their id is the address. Errors
// wrap ErrMalformed.
func ServiceAddress(id ledger.BookieID, data []byte) (string, error) {
	if len(data) == 0 {
		if _, _, err := net.SplitHostPort(string(id)); err != nil {
			return "", fmt.Errorf("%w: bookie %s registered no endpoints and its id is no address", ErrMalformed, id)
		}
		return string(id), nil
	}
	info := &bkproto.BookieServiceInfoFormat{}
	if err := proto.Unmarshal(data, info); err != nil {
		return "", fmt.Errorf("%w: bookie %s registration: %w", ErrMalformed, id, err)
	}
	for _, e := range info.GetEndpoints() {
		if e.GetProtocol() != bookieRPCProtocol {
			continue
		}
		if port := e.GetPort(); port <= 0 || port > 65535 || e.GetHost() == "" {
			return "", fmt.Errorf("%w: bookie %s: bookie-rpc endpoint %s:%d", ErrMalformed, id, e.GetHost(), port)
		}
		return net.JoinHostPort(e.GetHost(), strconv.Itoa(int(e.GetPort()))), nil
	}
	return "", fmt.Errorf("%w: bookie %s publishes no %s endpoint", ErrMalformed, id, bookieRPCProtocol)
}
