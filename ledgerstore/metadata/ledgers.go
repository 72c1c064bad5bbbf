package metadata

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"path"

	"keeper/coordination/zkclient"
	"keeper/coordination/zkproto"
	"keeper/ledgerstore/ledger"
)

// Outcomes of ledger operations that callers branch on.
var (
	// ErrNoLedger means the ledger's metadata znode does not exist.
	ErrNoLedger = errors.New("metadata: no such ledger")
	// ErrLedgerExists means Create found another creator's ledger at the id.
	ErrLedgerExists = errors.New("metadata: ledger already exists")
	// ErrBadVersion means a compare-and-set lost a race: the metadata
	// changed since the caller read it. The caller re-reads and decides by
	// its own rules (docs/bookkeeper-protocol.md §5.5) whether its change still applies.
	ErrBadVersion = errors.New("metadata: ledger metadata changed since it was read")
	// ErrInvalidLedgerID means a negative ledger id.
	ErrInvalidLedgerID = errors.New("metadata: invalid ledger id")
)

// Version is the data version of a ledger's metadata znode: the token of
// every compare-and-set. A new ledger's metadata has version 0.
type Version int32

// AnyVersion makes Delete unconditional. Write refuses it: every update is
// a compare-and-set.
const AnyVersion Version = -1

func checkID(id int64) error {
	if id < 0 {
		return fmt.Errorf("%w %d", ErrInvalidLedgerID, id)
	}
	return nil
}

// Create stores a new ledger's metadata at id and returns what it stored
// and its version. If md.CToken is 0, Create draws a random one first.
//
// Create is idempotent, as BookKeeper's is: if the znode exists and holds
// the same cToken, an earlier attempt of this create (whose reply was lost)
// made it, and Create returns the stored metadata and its current version.
// Any other existing znode gives ErrLedgerExists.
func (s *Store) Create(ctx context.Context, id int64, md ledger.Metadata) (ledger.Metadata, Version, error) {
	if err := checkID(id); err != nil {
		return ledger.Metadata{}, 0, err
	}
	md = md.Clone()
	if md.CToken == 0 {
		var err error
		if md.CToken, err = newCToken(); err != nil {
			return ledger.Metadata{}, 0, err
		}
	}
	data, err := Encode(md)
	if err != nil {
		return ledger.Metadata{}, 0, fmt.Errorf("metadata: create ledger %d: %w", id, err)
	}
	md.FormatVersion = FormatVersion3
	_, err = s.createFullPath(ctx, s.LedgerPath(id), data, 0)
	if err == nil {
		return md, 0, nil
	}
	if !errors.Is(err, zkproto.ErrNodeExists) {
		return ledger.Metadata{}, 0, fmt.Errorf("metadata: create ledger %d: %w", id, err)
	}
	stored, v, err := s.Read(ctx, id)
	switch {
	case err == nil && stored.CToken == md.CToken:
		return stored, v, nil
	case err == nil, errors.Is(err, ErrNoLedger):
		// Someone else's ledger, or one that existed and was deleted since:
		// recreating it could revive a ledger its owner deleted.
		return ledger.Metadata{}, 0, fmt.Errorf("metadata: create ledger %d: %w", id, ErrLedgerExists)
	default:
		return ledger.Metadata{}, 0, fmt.Errorf("metadata: create ledger %d: checking the existing znode: %w", id, err)
	}
}

// newCToken draws a random positive creator token.
func newCToken() (int64, error) {
	for {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("metadata: creator token: %w", err)
		}
		if t := int64(binary.BigEndian.Uint64(b[:]) >> 1); t != 0 {
			return t, nil
		}
	}
}

// Read returns ledger id's metadata and its version, or ErrNoLedger. When
// the metadata does not record its creation time, CreationTimeMs is the
// znode's creation time.
func (s *Store) Read(ctx context.Context, id int64) (ledger.Metadata, Version, error) {
	if err := checkID(id); err != nil {
		return ledger.Metadata{}, 0, err
	}
	data, stat, err := s.conn.Get(ctx, s.LedgerPath(id))
	if errors.Is(err, zkproto.ErrNoNode) {
		return ledger.Metadata{}, 0, fmt.Errorf("metadata: read ledger %d: %w", id, ErrNoLedger)
	}
	if err != nil {
		return ledger.Metadata{}, 0, fmt.Errorf("metadata: read ledger %d: %w", id, err)
	}
	md, v, err := decodeZnode(data, stat)
	if err != nil {
		return ledger.Metadata{}, 0, fmt.Errorf("metadata: read ledger %d: %w", id, err)
	}
	return md, v, nil
}

func decodeZnode(data []byte, stat zkproto.Stat) (ledger.Metadata, Version, error) {
	md, err := Decode(data)
	if err != nil {
		return ledger.Metadata{}, 0, err
	}
	if !md.StoreCreationTime {
		md.CTimeMillis = stat.Ctime
	}
	return md, Version(stat.Version), nil
}

// Write replaces ledger id's metadata if its version is still expected,
// and returns the new version. It fails with ErrBadVersion if the metadata
// changed since the caller read it, ErrNoLedger if the ledger is gone, and
// ErrMalformed if md does not Validate. Write checks md alone; whether it
// is a legal successor of the stored metadata is the caller's to check
// (CheckUpdate) against what it read.
//
// A context error means the outcome is unknown: read the metadata again.
func (s *Store) Write(ctx context.Context, id int64, md ledger.Metadata, expected Version) (Version, error) {
	if err := checkID(id); err != nil {
		return 0, err
	}
	if expected < 0 {
		return 0, fmt.Errorf("metadata: write ledger %d: version %d: a write must name the version it replaces",
			id, expected)
	}
	data, err := Encode(md)
	if err != nil {
		return 0, fmt.Errorf("metadata: write ledger %d: %w", id, err)
	}
	stat, err := s.conn.Set(ctx, s.LedgerPath(id), data, int32(expected))
	switch {
	case errors.Is(err, zkproto.ErrBadVersion):
		return 0, fmt.Errorf("metadata: write ledger %d at version %d: %w", id, expected, ErrBadVersion)
	case errors.Is(err, zkproto.ErrNoNode):
		return 0, fmt.Errorf("metadata: write ledger %d: %w", id, ErrNoLedger)
	case err != nil:
		return 0, fmt.Errorf("metadata: write ledger %d: %w", id, err)
	}
	return Version(stat.Version), nil
}

// Delete removes ledger id's metadata if its version is expected (any
// version with AnyVersion), then prunes the ledger directories it leaves
// empty, as BookKeeper's hierarchical managers do. Deleting a ledger that
// does not exist succeeds. A version mismatch gives ErrBadVersion.
func (s *Store) Delete(ctx context.Context, id int64, expected Version) error {
	if err := checkID(id); err != nil {
		return err
	}
	p := s.LedgerPath(id)
	err := s.conn.Delete(ctx, p, int32(expected))
	switch {
	case errors.Is(err, zkproto.ErrNoNode):
		return nil
	case errors.Is(err, zkproto.ErrBadVersion):
		return fmt.Errorf("metadata: delete ledger %d at version %d: %w", id, expected, ErrBadVersion)
	case err != nil:
		return fmt.Errorf("metadata: delete ledger %d: %w", id, err)
	}
	s.pruneEmptyParents(ctx, p)
	return nil
}

// pruneEmptyParents deletes the empty directories above a deleted ledger,
// up to but not including the root. It is best effort: a directory that
// gained a child, or any error, stops it, and the directory stays.
func (s *Store) pruneEmptyParents(ctx context.Context, leaf string) {
	for dir := path.Dir(leaf); dir != s.root && len(dir) > len(s.root); dir = path.Dir(dir) {
		stat, ok, err := s.conn.Exists(ctx, dir)
		if err != nil || !ok || stat.NumChildren != 0 {
			return
		}
		if err := s.conn.Delete(ctx, dir, -1); err != nil {
			return
		}
	}
}

// LedgerUpdate is one observation of a watched ledger's metadata.
type LedgerUpdate struct {
	Metadata ledger.Metadata
	Version  Version
	// Deleted means the ledger's znode is gone; it is the watch's last
	// update.
	Deleted bool
	// Err is set, instead of Metadata, when the stored metadata does not
	// decode (ErrMalformed). The watch goes on.
	Err error
}

// Watch follows ledger id's metadata: readers use it to see a close or an
// ensemble change. The channel first carries the current metadata, then
// the metadata after each change. It holds at most one undelivered update:
// a newer one replaces it, so a slow reader skips intermediate versions
// but always ends up with the latest. The channel closes after an update
// with Deleted set (at once if the ledger does not exist), when ctx is
// done, when the store is closed, or when the connection closes. Lost
// connections and expired sessions are retried.
func (s *Store) Watch(ctx context.Context, id int64) <-chan LedgerUpdate {
	ch := make(chan LedgerUpdate, 1)
	if checkID(id) != nil {
		ch <- LedgerUpdate{Deleted: true}
		close(ch)
		return ch
	}
	if !s.startWatch(ctx, func(ctx context.Context) { defer close(ch); s.watchLedger(ctx, id, ch) }) {
		close(ch)
	}
	return ch
}

func (s *Store) watchLedger(ctx context.Context, id int64, ch chan LedgerUpdate) {
	p := s.LedgerPath(id)
	backoff := s.backoff
	lastMzxid := int64(-1)
	for {
		data, stat, watch, err := s.conn.GetW(ctx, p)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, zkproto.ErrNoNode):
			offer(ch, LedgerUpdate{Deleted: true})
			return
		case err != nil:
			s.log.Warn("ledger metadata watch failed; retrying", "ledger", id, "err", err)
			var ok bool
			if backoff, ok = s.pause(ctx, backoff); !ok {
				return
			}
			continue
		}
		backoff = s.backoff
		// Mzxid, not the version, identifies a write: a ledger deleted and
		// created again starts over at version 0.
		if stat.Mzxid != lastMzxid {
			lastMzxid = stat.Mzxid
			md, v, err := decodeZnode(data, stat)
			offer(ch, LedgerUpdate{Metadata: md, Version: v, Err: err})
		}
		select {
		case ev := <-watch:
			if sessionClosed(ev) {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// sessionClosed reports whether a watch event says the session is closed
// for good, as opposed to a change or an expired session (after which the
// zkclient.Session opens a new one and the watch is armed again).
func sessionClosed(ev zkproto.WatcherEvent) bool {
	return ev.Type == zkproto.EventNone && ev.State == zkclient.StateClosed
}

// offer hands v to a watcher through ch, a channel of capacity one with a
// single sender, replacing an update the watcher has not taken yet.
func offer[T any](ch chan T, v T) {
	for {
		select {
		case ch <- v:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}
