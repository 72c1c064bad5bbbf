package metadata

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
)

// Znode names under the ledgers root (docs/bookkeeper-protocol.md §5.2).
const (
	availableNode  = "available"
	readOnlyNode   = "readonly"
	cookiesNode    = "cookies"
	layoutNode     = "LAYOUT"
	instanceIDNode = "INSTANCEID"
	underRepNode   = "underreplication"
	idGenNode      = "idgen"
	idGenLongNode  = "idgen-long"
	idGenPrefix    = "ID-"
)

// DefaultRoot is BookKeeper's default ledgers root.
const DefaultRoot = "/ledgers"

// Config configures a Store. The zero value is BookKeeper's defaults.
type Config struct {
	// Root is the ledgers root znode; "" means DefaultRoot.
	Root string
	// Layout maps ledger ids to paths; the zero value is
	// LayoutHierarchical, BookKeeper's default.
	Layout Layout
	// ACL is given to every znode the store creates; nil means
	// world:anyone with all permissions (ZooKeeper's OPEN_ACL_UNSAFE), what
	// BookKeeper uses unless zkEnableSecurity is set.
	ACL []zkproto.ACL
	// RetryBackoff is the first pause before a watch retries after an error
	// (a lost connection, an expired session); it doubles up to
	// maxRetryBackoff. 0 means 50ms.
	RetryBackoff time.Duration
	// Logger receives the store's logs; nil discards them.
	Logger *slog.Logger
}

// maxRetryBackoff caps the pause between a watch's retries: long enough not
// to hammer a server that is down, short enough that a watcher catches up
// within a couple of seconds of the service coming back.
const maxRetryBackoff = 2 * time.Second

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.Root != "" && (!strings.HasPrefix(c.Root, "/") || strings.HasSuffix(c.Root, "/") ||
		strings.Contains(c.Root, "//")) {
		return fmt.Errorf("metadata: root %q: want an absolute znode path such as %s", c.Root, DefaultRoot)
	}
	if !c.Layout.valid() {
		return fmt.Errorf("metadata: unknown layout %v", c.Layout)
	}
	if c.RetryBackoff < 0 {
		return fmt.Errorf("metadata: negative retry backoff %v", c.RetryBackoff)
	}
	return nil
}

// zkConn is the part of *zkclient.Session the store uses. Tests wrap a
// real session with one that injects faults. Errors from the server are
// *zkproto.Error values: test them with errors.Is against the zkproto
// sentinels. A watch channel receives one event: the change, or an
// EventNone whose state says the session expired (zkclient.StateExpired)
// or was closed (zkclient.StateClosed).
type zkConn interface {
	Create(ctx context.Context, path string, data []byte, opts zkclient.CreateOptions) (string, zkproto.Stat, error)
	Get(ctx context.Context, path string) ([]byte, zkproto.Stat, error)
	GetW(ctx context.Context, path string) ([]byte, zkproto.Stat, <-chan zkproto.WatcherEvent, error)
	Set(ctx context.Context, path string, data []byte, version int32) (zkproto.Stat, error)
	Delete(ctx context.Context, path string, version int32) error
	Exists(ctx context.Context, path string) (zkproto.Stat, bool, error)
	ExistsW(ctx context.Context, path string) (zkproto.Stat, bool, <-chan zkproto.WatcherEvent, error)
	Children(ctx context.Context, path string) ([]string, zkproto.Stat, error)
	ChildrenW(ctx context.Context, path string) ([]string, zkproto.Stat, <-chan zkproto.WatcherEvent, error)
	Multi(ctx context.Context, ops ...zkproto.MultiOp) ([]zkproto.MultiResult, error)
	// SessionID is the session's id (the one being reattached while a
	// connection is replaced): a Registration tells its own ephemeral
	// znodes by it.
	SessionID() int64
}

// Store keeps ledger metadata and reads the bookie registry in a ZooKeeper
// (or keeper) ensemble, in BookKeeper's layout, so BookKeeper's own clients
// and bookies can share the tree. It is safe for concurrent use.
//
// The store does not own the session: the caller closes the
// *zkclient.Session after Close.
type Store struct {
	conn    zkConn
	root    string
	layout  Layout
	acl     []zkproto.ACL
	backoff time.Duration
	log     *slog.Logger

	life    context.Context // cancelled by Close; ends every watch
	cancel  context.CancelFunc
	mu      sync.Mutex // guards closed, and orders watches.Add before Close's Wait
	closed  bool
	watches sync.WaitGroup

	longIDsMu sync.Mutex
	longIDs   int // idGenUnknown, idGenShort or idGenLong: how NewLedgerID mints ids
}

// New returns a store over a session.
func New(conn *zkclient.Session, cfg Config) (*Store, error) {
	if conn == nil {
		return nil, errors.New("metadata: nil session")
	}
	return newStore(conn, cfg)
}

func newStore(conn zkConn, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{conn: conn, root: cfg.Root, layout: cfg.Layout, acl: cfg.ACL,
		backoff: cfg.RetryBackoff, log: cfg.Logger}
	s.life, s.cancel = context.WithCancel(context.Background())
	if s.root == "" {
		s.root = DefaultRoot
	}
	if s.acl == nil {
		s.acl = zkproto.OpenACLUnsafe
	}
	if s.backoff == 0 {
		s.backoff = 50 * time.Millisecond
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Close ends every watch the store runs and waits for their goroutines to
// finish. Calls already in flight complete normally.
func (s *Store) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.watches.Wait()
}

// startWatch runs a watch loop in its own goroutine with a context that
// ends with ctx or with the store. It reports false, running nothing, if
// the store is closed.
func (s *Store) startWatch(ctx context.Context, loop func(ctx context.Context)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.watches.Add(1)
	go func() {
		defer s.watches.Done()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(s.life, cancel)
		defer stop()
		loop(ctx)
	}()
	return true
}

// Root returns the ledgers root znode.
func (s *Store) Root() string { return s.root }

// LedgerPath returns the znode of ledger id's metadata. The id must not be
// negative.
func (s *Store) LedgerPath(id int64) string { return s.layout.Path(s.root, id) }

// Init makes sure the ledgers tree exists, as `bookkeeper shell
// metaformat` leaves it: if the root is missing, it creates the root,
// available, available/readonly and INSTANCEID (a new random UUID) in one
// multi-op, then the LAYOUT znode. On an existing tree it adds whatever of
// available, available/readonly and LAYOUT is missing and checks that
// LAYOUT names the configured layout (ErrLayoutMismatch if not). It never
// replaces INSTANCEID. Init is idempotent and safe to race with other
// clients doing the same.
//
// Like metaformat, Init does not create the cookies znode; the first bookie
// to write a cookie creates it.
func (s *Store) Init(ctx context.Context) error {
	_, exists, err := s.conn.Exists(ctx, s.root)
	if err != nil {
		return fmt.Errorf("metadata: init %s: %w", s.root, err)
	}
	if !exists {
		if err := s.format(ctx); err != nil {
			return err
		}
	}
	for _, p := range []string{s.root + "/" + availableNode, s.root + "/" + availableNode + "/" + readOnlyNode} {
		if err := s.createIfAbsent(ctx, p, nil); err != nil {
			return fmt.Errorf("metadata: init: %w", err)
		}
	}
	return s.ensureLayout(ctx)
}

// format creates a new cluster's tree below the root's parents.
func (s *Store) format(ctx context.Context) error {
	if err := s.createParents(ctx, s.root); err != nil {
		return fmt.Errorf("metadata: init: %w", err)
	}
	id, err := newUUID()
	if err != nil {
		return err
	}
	avail := s.root + "/" + availableNode
	create := func(path string, data []byte) zkproto.MultiOp {
		return zkproto.MultiOp{Op: zkproto.OpCreate, Record: &zkproto.CreateRequest{Path: path, Data: data, ACL: s.acl}}
	}
	_, err = s.conn.Multi(ctx, create(s.root, []byte{}), create(avail, []byte{}),
		create(avail+"/"+readOnlyNode, []byte{}), create(s.root+"/"+instanceIDNode, []byte(id)))
	switch {
	case err == nil:
		s.log.Info("created the ledgers tree", "root", s.root, "instanceId", id)
	case errors.Is(err, zkproto.ErrNodeExists):
		// Another client formatted the tree first; use theirs.
	default:
		return fmt.Errorf("metadata: init %s: %w", s.root, err)
	}
	return nil
}

// ensureLayout creates LAYOUT if it is missing and checks it otherwise.
func (s *Store) ensureLayout(ctx context.Context) error {
	path := s.root + "/" + layoutNode
	for range 2 {
		data, _, err := s.conn.Get(ctx, path)
		if err == nil {
			return s.layout.checkLayoutData(data)
		}
		if !errors.Is(err, zkproto.ErrNoNode) {
			return fmt.Errorf("metadata: read %s: %w", path, err)
		}
		_, _, err = s.conn.Create(ctx, path, s.layout.LayoutData(), zkclient.CreateOptions{ACL: s.acl})
		if err == nil {
			return nil
		}
		if !errors.Is(err, zkproto.ErrNodeExists) {
			return fmt.Errorf("metadata: create %s: %w", path, err)
		}
	}
	return fmt.Errorf("metadata: %s keeps appearing and disappearing", path)
}

// InstanceID returns the cluster's instance id (the INSTANCEID znode), or
// "" if the tree has none.
func (s *Store) InstanceID(ctx context.Context) (string, error) {
	path := s.root + "/" + instanceIDNode
	data, _, err := s.conn.Get(ctx, path)
	if errors.Is(err, zkproto.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("metadata: read %s: %w", path, err)
	}
	return string(data), nil
}

// newUUID returns a random (version 4) UUID in Java's
// UUID.randomUUID().toString() form.
func newUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("metadata: instance id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

// createIfAbsent creates a persistent znode, succeeding if it exists.
func (s *Store) createIfAbsent(ctx context.Context, path string, data []byte) error {
	_, _, err := s.conn.Create(ctx, path, data, zkclient.CreateOptions{ACL: s.acl})
	if err != nil && !errors.Is(err, zkproto.ErrNodeExists) {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return nil
}

// maxCreateAttempts bounds createFullPath's retries. A create retries only
// when a parent it just made vanished (an empty ledger directory that a
// concurrent Delete pruned), so a few rounds are plenty.
const maxCreateAttempts = 5

// createFullPath creates path, first creating any missing parents as empty
// persistent znodes (BookKeeper's createFullPathOptimistic). It returns the
// created path, which for a sequential znode carries the suffix.
func (s *Store) createFullPath(ctx context.Context, path string, data []byte, flags int32) (string, error) {
	for range maxCreateAttempts {
		name, _, err := s.conn.Create(ctx, path, data, zkclient.CreateOptions{Flags: flags, ACL: s.acl})
		if !errors.Is(err, zkproto.ErrNoNode) {
			return name, err
		}
		if err := s.createParents(ctx, path); err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("create %s: parents keep disappearing: %w", path, zkproto.ErrNoNode)
}

// createParents creates every missing ancestor of path, top down.
func (s *Store) createParents(ctx context.Context, path string) error {
	for i := 1; i < len(path); i++ {
		if path[i] != '/' {
			continue
		}
		if err := s.createIfAbsent(ctx, path[:i], nil); err != nil {
			return err
		}
	}
	return nil
}

// pause waits before a watch's next attempt and returns the next backoff.
// It reports false if ctx is done first.
func (s *Store) pause(ctx context.Context, backoff time.Duration) (time.Duration, bool) {
	t := time.NewTimer(backoff)
	defer t.Stop()
	select {
	case <-t.C:
		return min(2*backoff, maxRetryBackoff), true
	case <-ctx.Done():
		return backoff, false
	}
}
