package autorecovery

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"keeper/ledgerstore/metadata"
)

// ErrAlreadySet means Disable found replication already disabled, or
// Enable found it already enabled (BookKeeper reports both as errors too).
var ErrAlreadySet = errors.New("autorecovery: replication already in that state")

// Manager keeps the under-replication tree of one ledgers root in
// BookKeeper's layout (ZkLedgerUnderreplicationManager's): markers, locks,
// the disable switch and lostBookieRecoveryDelay. Safe for concurrent use.
// Locks are ephemeral znodes of the store's session: they go with it.
type Manager struct {
	store    *metadata.Store
	paths    Paths
	lockData []byte
	now      func() time.Time

	mu  sync.Mutex // guards rng
	rng *rand.Rand
}

// NewManager checks the tree's LAYOUT (creating the tree's directories
// and LAYOUT if missing, as BookKeeper does) and returns a manager whose
// locks name workerID.
func NewManager(ctx context.Context, store *metadata.Store, workerID string) (*Manager, error) {
	m := &Manager{store: store, paths: NewPaths(store.Root()), lockData: EncodeLockData(workerID), now: time.Now,
		rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5eed))}
	if err := m.checkTree(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// Paths returns the tree's paths.
func (m *Manager) Paths() Paths { return m.paths }

func (m *Manager) checkTree(ctx context.Context) error {
	for range 3 {
		data, _, err := m.store.GetNode(ctx, m.paths.Layout())
		if err == nil {
			if err := checkLayout(data); err != nil {
				return err
			}
			break
		}
		if !errors.Is(err, metadata.ErrNoNode) {
			return fmt.Errorf("autorecovery: %w", err)
		}
		if _, err := m.store.CreateNode(ctx, m.paths.Layout(), encodeLayout(), metadata.NodePersistent); err != nil &&
			!errors.Is(err, metadata.ErrNodeExists) {
			return fmt.Errorf("autorecovery: %w", err)
		}
	}
	for _, dir := range []string{m.paths.Ledgers(), m.paths.Locks()} {
		if err := m.ensureDir(ctx, dir); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) ensureDir(ctx context.Context, dir string) error {
	if _, err := m.store.CreateNode(ctx, dir, []byte{}, metadata.NodePersistent); err != nil &&
		!errors.Is(err, metadata.ErrNodeExists) {
		return fmt.Errorf("autorecovery: %w", err)
	}
	return nil
}

// maxCASRounds bounds the compare-and-set retries of one marker update: each
// lost round means another auditor or tool changed the same marker, which
// settles within a few rounds.
const maxCASRounds = 20

// Mark marks ledger id under-replicated with replicas missing, merging them
// into an existing marker (which keeps its order and adds what it lacks),
// as BookKeeper's auditor and `decommission` do.
func (m *Manager) Mark(ctx context.Context, id int64, replicas []string) error {
	p := m.paths.Marker(id)
	for range maxCASRounds {
		_, err := m.store.CreateNode(ctx, p, EncodeMarker(replicas, m.now().UnixMilli()), metadata.NodePersistent)
		if err == nil {
			return nil
		}
		if !errors.Is(err, metadata.ErrNodeExists) {
			return fmt.Errorf("autorecovery: mark ledger %d: %w", id, err)
		}
		data, v, err := m.store.GetNode(ctx, p)
		if errors.Is(err, metadata.ErrNoNode) {
			continue // replicated meanwhile: create it again
		}
		if err != nil {
			return fmt.Errorf("autorecovery: mark ledger %d: %w", id, err)
		}
		have, _, err := DecodeMarker(data)
		if err != nil {
			return fmt.Errorf("autorecovery: mark ledger %d: %w", id, err)
		}
		merged := slices.Clone(have)
		for _, r := range replicas {
			if !slices.Contains(merged, r) {
				merged = append(merged, r)
			}
		}
		if len(merged) == len(have) {
			return nil
		}
		_, err = m.store.SetNode(ctx, p, EncodeMarker(merged, m.now().UnixMilli()), v)
		if err == nil || !errors.Is(err, metadata.ErrBadVersion) && !errors.Is(err, metadata.ErrNoNode) {
			return err
		}
	}
	return fmt.Errorf("autorecovery: mark ledger %d: the marker keeps changing", id)
}

// Info returns ledger id's marker; ok is false if the ledger is not marked.
func (m *Manager) Info(ctx context.Context, id int64) (Marked, bool, error) {
	data, _, err := m.store.GetNode(ctx, m.paths.Marker(id))
	if errors.Is(err, metadata.ErrNoNode) {
		return Marked{}, false, nil
	}
	if err != nil {
		return Marked{}, false, fmt.Errorf("autorecovery: %w", err)
	}
	replicas, ctime, err := DecodeMarker(data)
	if err != nil {
		return Marked{}, false, fmt.Errorf("autorecovery: marker of ledger %d: %w", id, err)
	}
	return Marked{LedgerID: id, Replicas: replicas, CTimeMillis: ctime}, true, nil
}

// List returns every marked ledger, sorted by id. Markers that vanish
// during the walk are left out.
func (m *Manager) List(ctx context.Context) ([]Marked, error) {
	var out []Marked
	err := m.walk(ctx, m.paths.Ledgers(), 0, func(leaf string, id int64) error {
		info, ok, err := m.Info(ctx, id)
		if ok {
			out = append(out, info)
		}
		return err
	})
	slices.SortFunc(out, func(a, b Marked) int { return cmpInt(a.LedgerID, b.LedgerID) })
	return out, err
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// walk calls leaf for every marker below dir, depth levels down from the
// markers' root. A directory that vanishes mid-walk is skipped (a marker
// being deleted prunes its parents).
func (m *Manager) walk(ctx context.Context, dir string, depth int, leaf func(path string, id int64) error) error {
	names, err := m.store.NodeChildren(ctx, dir)
	if errors.Is(err, metadata.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("autorecovery: %w", err)
	}
	slices.Sort(names)
	for _, name := range names {
		child := dir + "/" + name
		if depth == hierarchyLevels {
			if id, ok := ParseMarkerName(name); ok {
				if err := leaf(child, id); err != nil {
					return err
				}
			}
			continue
		}
		if err := m.walk(ctx, child, depth+1, leaf); err != nil {
			return err
		}
	}
	return nil
}

// Lock is a worker's hold on one marked ledger.
type Lock struct {
	LedgerID int64
	// markerVersion is the marker's version when the lock was taken: the
	// marker is deleted only if nobody marked the ledger again since.
	markerVersion metadata.Version
}

// Acquire takes the lock of some marked ledger that no worker holds and
// returns it; ok is false if there is none. The choice among the markers is
// random, so workers racing for work spread over the ledgers.
func (m *Manager) Acquire(ctx context.Context) (Lock, bool, error) {
	var markers []string
	err := m.walk(ctx, m.paths.Ledgers(), 0, func(leaf string, _ int64) error {
		markers = append(markers, leaf)
		return nil
	})
	if err != nil {
		return Lock{}, false, err
	}
	m.mu.Lock()
	m.rng.Shuffle(len(markers), func(i, j int) { markers[i], markers[j] = markers[j], markers[i] })
	m.mu.Unlock()
	for _, p := range markers {
		id, _ := ParseMarkerName(path.Base(p))
		_, v, err := m.store.GetNode(ctx, p)
		if errors.Is(err, metadata.ErrNoNode) {
			continue
		}
		if err != nil {
			return Lock{}, false, fmt.Errorf("autorecovery: %w", err)
		}
		_, err = m.store.CreateNode(ctx, m.paths.Lock(id), m.lockData, metadata.NodeEphemeral)
		if errors.Is(err, metadata.ErrNodeExists) {
			continue
		}
		if err != nil {
			return Lock{}, false, fmt.Errorf("autorecovery: lock ledger %d: %w", id, err)
		}
		return Lock{LedgerID: id, markerVersion: v}, true, nil
	}
	return Lock{}, false, nil
}

// Release gives a lock up, leaving the marker for another try.
func (m *Manager) Release(ctx context.Context, l Lock) error {
	err := m.store.DeleteNode(ctx, m.paths.Lock(l.LedgerID), metadata.AnyVersion)
	if err != nil && !errors.Is(err, metadata.ErrNoNode) {
		return fmt.Errorf("autorecovery: release ledger %d: %w", l.LedgerID, err)
	}
	return nil
}

// MarkReplicated deletes the ledger's marker, unless someone marked the
// ledger again since the lock was taken (then the marker stays for the
// next round), prunes the directories it leaves empty, and releases the
// lock.
func (m *Manager) MarkReplicated(ctx context.Context, l Lock) error {
	p := m.paths.Marker(l.LedgerID)
	err := m.store.DeleteNode(ctx, p, l.markerVersion)
	switch {
	case err == nil:
		m.prune(ctx, path.Dir(p))
	case errors.Is(err, metadata.ErrNoNode), errors.Is(err, metadata.ErrBadVersion):
	default:
		_ = m.Release(ctx, l)
		return fmt.Errorf("autorecovery: unmark ledger %d: %w", l.LedgerID, err)
	}
	return m.Release(ctx, l)
}

// prune deletes the empty hierarchy directories above a deleted marker;
// a directory that gained a marker meanwhile stays.
func (m *Manager) prune(ctx context.Context, dir string) {
	for dir != m.paths.Ledgers() && strings.HasPrefix(dir, m.paths.Ledgers()+"/") {
		if err := m.store.DeleteNode(ctx, dir, metadata.AnyVersion); err != nil {
			return
		}
		dir = path.Dir(dir)
	}
}

// Locked reports whether some worker holds ledger id's lock, and which
// (the lock's LockDataFormat; "" if it names none).
func (m *Manager) Locked(ctx context.Context, id int64) (string, bool, error) {
	data, _, err := m.store.GetNode(ctx, m.paths.Lock(id))
	if errors.Is(err, metadata.ErrNoNode) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("autorecovery: %w", err)
	}
	worker, _ := DecodeLockData(data)
	return worker, true, nil
}

// Enabled reports whether replication is enabled (no disable znode), and
// returns a channel closed when that may have changed.
func (m *Manager) Enabled(ctx context.Context) (bool, <-chan struct{}, error) {
	disabled, changed, err := m.store.NodeExistsWatch(ctx, m.paths.Disable())
	if err != nil {
		return false, nil, fmt.Errorf("autorecovery: %w", err)
	}
	return !disabled, changed, nil
}

// Disable pauses every worker (`bookkeeper shell autorecovery -disable`).
func (m *Manager) Disable(ctx context.Context) error {
	_, err := m.store.CreateNode(ctx, m.paths.Disable(), []byte{}, metadata.NodePersistent)
	if errors.Is(err, metadata.ErrNodeExists) {
		return fmt.Errorf("%w: disabled", ErrAlreadySet)
	}
	return err
}

// Enable resumes the workers.
func (m *Manager) Enable(ctx context.Context) error {
	err := m.store.DeleteNode(ctx, m.paths.Disable(), metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNoNode) {
		return fmt.Errorf("%w: enabled", ErrAlreadySet)
	}
	return err
}

// InitDelay stores lostBookieRecoveryDelay unless the tree has one already
// (the stored value wins: an operator may have changed it at runtime).
func (m *Manager) InitDelay(ctx context.Context, seconds int) error {
	_, err := m.store.CreateNode(ctx, m.paths.Delay(), EncodeDelay(seconds), metadata.NodePersistent)
	if err != nil && !errors.Is(err, metadata.ErrNodeExists) {
		return fmt.Errorf("autorecovery: %w", err)
	}
	return nil
}

// SetDelay stores lostBookieRecoveryDelay; the auditor picks it up at once.
func (m *Manager) SetDelay(ctx context.Context, seconds int) error {
	if seconds < 0 {
		return fmt.Errorf("autorecovery: negative lostBookieRecoveryDelay %d", seconds)
	}
	_, err := m.store.SetNode(ctx, m.paths.Delay(), EncodeDelay(seconds), metadata.AnyVersion)
	if errors.Is(err, metadata.ErrNoNode) {
		_, err = m.store.CreateNode(ctx, m.paths.Delay(), EncodeDelay(seconds), metadata.NodePersistent)
	}
	if err != nil {
		return fmt.Errorf("autorecovery: %w", err)
	}
	return nil
}

// Delay returns the stored lostBookieRecoveryDelay and a channel closed
// when it may have changed. ok is false if none is stored.
func (m *Manager) Delay(ctx context.Context) (seconds int, ok bool, changed <-chan struct{}, err error) {
	exists, changed, err := m.store.NodeExistsWatch(ctx, m.paths.Delay())
	if err != nil {
		return 0, false, nil, fmt.Errorf("autorecovery: %w", err)
	}
	if !exists {
		return 0, false, changed, nil
	}
	data, _, err := m.store.GetNode(ctx, m.paths.Delay())
	if errors.Is(err, metadata.ErrNoNode) {
		return 0, false, changed, nil
	}
	if err != nil {
		return 0, false, changed, fmt.Errorf("autorecovery: %w", err)
	}
	seconds, err = DecodeDelay(data)
	if err != nil {
		return 0, false, changed, err
	}
	return seconds, true, changed, nil
}
