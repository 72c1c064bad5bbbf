package metadata

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"keeper/coordination/zkproto"
)

// Plain znode access under the ledgers root, for the services that keep
// state of their own beside the ledgers (autorecovery's under-replication
// markers, locks and auditor votes, docs/autorecovery.md). Paths are
// absolute and must lie below Root; outcomes a caller branches on are the
// sentinels below, so callers never see the ZooKeeper client's own errors.

// Outcomes of the plain znode operations.
var (
	// ErrNoNode means the znode (or, for a create, its parent) does not exist.
	ErrNoNode = errors.New("metadata: no such znode")
	// ErrNodeExists means a create found the znode already there.
	ErrNodeExists = errors.New("metadata: znode already exists")
	// ErrNotEmpty means a delete found children under the znode.
	ErrNotEmpty = errors.New("metadata: znode has children")
	// ErrOutsideRoot means a path does not lie below the ledgers root.
	ErrOutsideRoot = errors.New("metadata: path outside the ledgers root")
)

// NodeMode is how CreateNode creates a znode.
type NodeMode int32

// The create modes, ZooKeeper's CreateMode values.
const (
	NodePersistent          NodeMode = NodeMode(zkproto.FlagPersistent)
	NodeEphemeral           NodeMode = NodeMode(zkproto.FlagEphemeral)
	NodeSequential          NodeMode = NodeMode(zkproto.FlagPersistentSequential)
	NodeEphemeralSequential NodeMode = NodeMode(zkproto.FlagEphemeralSequential)
)

// checkPath refuses a path that is not below the root: the plain
// operations are for state beside the ledgers, never for the rest of the
// coordination service.
func (s *Store) checkPath(path string) error {
	if !strings.HasPrefix(path, s.root+"/") || strings.HasSuffix(path, "/") || strings.Contains(path, "//") {
		return fmt.Errorf("%w: %q (root %s)", ErrOutsideRoot, path, s.root)
	}
	return nil
}

// nodeErr maps the client's errors to this package's sentinels.
func nodeErr(op, path string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zkproto.ErrNoNode):
		err = ErrNoNode
	case errors.Is(err, zkproto.ErrNodeExists):
		err = ErrNodeExists
	case errors.Is(err, zkproto.ErrNotEmpty):
		err = ErrNotEmpty
	case errors.Is(err, zkproto.ErrBadVersion):
		err = ErrBadVersion
	}
	return fmt.Errorf("metadata: %s %s: %w", op, path, err)
}

// CreateNode creates a znode below the root, first creating any missing
// parents as empty persistent znodes. It returns the created path, which
// for a sequential mode carries the sequence suffix. An ephemeral znode
// lives as long as the store's session.
func (s *Store) CreateNode(ctx context.Context, path string, data []byte, mode NodeMode) (string, error) {
	if err := s.checkPath(path); err != nil {
		return "", err
	}
	name, err := s.createFullPath(ctx, path, data, int32(mode))
	return name, nodeErr("create", path, err)
}

// GetNode returns a znode's data and version.
func (s *Store) GetNode(ctx context.Context, path string) ([]byte, Version, error) {
	if err := s.checkPath(path); err != nil {
		return nil, 0, err
	}
	data, stat, err := s.conn.Get(ctx, path)
	if err != nil {
		return nil, 0, nodeErr("read", path, err)
	}
	return data, Version(stat.Version), nil
}

// SetNode replaces a znode's data if its version is expected (any version
// with AnyVersion) and returns the new version.
func (s *Store) SetNode(ctx context.Context, path string, data []byte, expected Version) (Version, error) {
	if err := s.checkPath(path); err != nil {
		return 0, err
	}
	stat, err := s.conn.Set(ctx, path, data, int32(expected))
	if err != nil {
		return 0, nodeErr("write", path, err)
	}
	return Version(stat.Version), nil
}

// DeleteNode deletes a znode if its version is expected (any version with
// AnyVersion).
func (s *Store) DeleteNode(ctx context.Context, path string, expected Version) error {
	if err := s.checkPath(path); err != nil {
		return err
	}
	return nodeErr("delete", path, s.conn.Delete(ctx, path, int32(expected)))
}

// NodeChildren lists a znode's children, unsorted, as the server returns
// them.
func (s *Store) NodeChildren(ctx context.Context, path string) ([]string, error) {
	if err := s.checkPath(path); err != nil {
		return nil, err
	}
	names, _, err := s.conn.Children(ctx, path)
	return names, nodeErr("list", path, err)
}

// NodeExistsWatch reports whether a znode exists and arms a one-shot
// watch on it: the returned channel is closed at the znode's next
// creation, change or deletion, when the session's watches are lost (a
// lost connection or an expiry; the caller looks again), when ctx is done,
// or when the store closes. The watch's goroutine ends then too.
func (s *Store) NodeExistsWatch(ctx context.Context, path string) (bool, <-chan struct{}, error) {
	if err := s.checkPath(path); err != nil {
		return false, nil, err
	}
	_, ok, ev, err := s.conn.ExistsW(ctx, path)
	if err != nil {
		return false, nil, nodeErr("watch", path, err)
	}
	return ok, s.fired(ctx, ev), nil
}

// fired returns a channel closed when ev delivers, ctx is done or the
// store closes.
func (s *Store) fired(ctx context.Context, ev <-chan zkproto.WatcherEvent) <-chan struct{} {
	out := make(chan struct{})
	if !s.startWatch(ctx, func(ctx context.Context) {
		defer close(out)
		select {
		case <-ev:
		case <-ctx.Done():
		}
	}) {
		close(out)
	}
	return out
}
