package autorecovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/metadata"
)

// What the operators' tools ask of autorecovery, shared by `keeper ledger`
// and the bookie's HTTP admin API (docs/autorecovery.md, "Tools").

var (
	// ErrReplicationDisabled means the disable znode exists: workers take
	// no work, so an audit would mark ledgers nobody copies.
	ErrReplicationDisabled = errors.New("autorecovery: ledger replication is disabled")
	// ErrNoAuditor means no process votes in the auditor election.
	ErrNoAuditor = errors.New("autorecovery: no auditor elected")
	// ErrNoDelay means the tree holds no lostBookieRecoveryDelay (no
	// auditor ever ran on it).
	ErrNoDelay = errors.New("autorecovery: no lostBookieRecoveryDelay stored")
	// ErrBookieRegistered means a bookie to recover is still registered:
	// it runs, and copying from it would race its own writes.
	ErrBookieRegistered = errors.New("autorecovery: the bookie is registered (running): stop it first")
)

// maxAuditorReads bounds CurrentAuditor's retries when the lowest vote goes
// between the listing and the read (the auditor changed meanwhile).
const maxAuditorReads = 5

// CurrentAuditor returns the bookie id in the lowest vote of the auditor
// election, as BookKeeper's tools find the auditor; ok is false if nobody
// votes.
func (m *Manager) CurrentAuditor(ctx context.Context) (id string, ok bool, err error) {
	dir := m.paths.Election()
	for range maxAuditorReads {
		names, err := m.store.NodeChildren(ctx, dir)
		if errors.Is(err, metadata.ErrNoNode) {
			return "", false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("autorecovery: %w", err)
		}
		lowest, seq := "", int64(-1)
		for _, n := range names {
			if s, ok := parseVoteSeq(n); ok && (seq < 0 || s < seq) {
				lowest, seq = n, s
			}
		}
		if lowest == "" {
			return "", false, nil
		}
		data, _, err := m.store.GetNode(ctx, dir+"/"+lowest)
		if errors.Is(err, metadata.ErrNoNode) {
			continue // that process left: ask again
		}
		if err != nil {
			return "", false, fmt.Errorf("autorecovery: %w", err)
		}
		id, err := DecodeVote(data)
		if err != nil {
			return "", false, fmt.Errorf("autorecovery: vote %s: %w", lowest, err)
		}
		return id, true, nil
	}
	return "", false, fmt.Errorf("autorecovery: the auditor keeps changing")
}

// ReplicationEnabled reports whether workers take work (no disable znode).
// Unlike Enabled it leaves no watch behind.
func (m *Manager) ReplicationEnabled(ctx context.Context) (bool, error) {
	_, _, err := m.store.GetNode(ctx, m.paths.Disable())
	if errors.Is(err, metadata.ErrNoNode) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("autorecovery: %w", err)
	}
	return false, nil
}

// StoredDelay returns the lostBookieRecoveryDelay in the tree, in seconds
// (ErrNoDelay if there is none). Unlike Delay it leaves no watch behind.
func (m *Manager) StoredDelay(ctx context.Context) (int, error) {
	data, _, err := m.store.GetNode(ctx, m.paths.Delay())
	if errors.Is(err, metadata.ErrNoNode) {
		return 0, ErrNoDelay
	}
	if err != nil {
		return 0, fmt.Errorf("autorecovery: %w", err)
	}
	return DecodeDelay(data)
}

// TriggerAudit makes the auditor mark the ledgers of every lost bookie
// now, whatever is left of their delay, as BookKeeper's triggerAudit does:
// it writes lostBookieRecoveryDelay back unchanged, which the auditor
// reads as "audit now". It refuses when replication is disabled, when no
// auditor is elected and when no delay is stored, since then nothing would
// happen.
func (m *Manager) TriggerAudit(ctx context.Context) error {
	enabled, err := m.ReplicationEnabled(ctx)
	if err != nil {
		return err
	}
	if !enabled {
		return ErrReplicationDisabled
	}
	if _, ok, err := m.CurrentAuditor(ctx); err != nil {
		return err
	} else if !ok {
		return ErrNoAuditor
	}
	seconds, err := m.StoredDelay(ctx)
	if err != nil {
		return err
	}
	return m.SetDelay(ctx, seconds)
}

// ReplicaFilter returns the test BookKeeper's listunderreplicated applies
// to a marker's missing replicas: with including, the list must name it;
// with excluding, it must not. A blank bookie id sets no condition; nil
// means every marker passes.
func ReplicaFilter(including, excluding string) func(replicas []string) bool {
	inc, exc := strings.TrimSpace(including) != "", strings.TrimSpace(excluding) != ""
	if !inc && !exc {
		return nil
	}
	return func(replicas []string) bool {
		return (!inc || slices.Contains(replicas, including)) && (!exc || !slices.Contains(replicas, excluding))
	}
}

// RecoverConfig configures RecoverBookies.
type RecoverConfig struct {
	// Store is the metadata store; the worker's locks live on its session.
	Store *metadata.Store
	// Client fences and closes open ledgers whose writer is gone.
	Client *ledgerclient.Client
	// WorkerID names the worker in its locks.
	WorkerID string
	// OpenLedgerRereplicationGracePeriod is how long an open ledger's
	// writer gets to replace the bookie itself (0: the default).
	OpenLedgerRereplicationGracePeriod time.Duration
	Logger                             *slog.Logger
}

// recoverPoll is how often RecoverBookies looks whether any ledger still
// names the bookies; each look reads every ledger's metadata.
const recoverPoll = 200 * time.Millisecond

// RecoverBookies copies everything the given stopped bookies held to other
// bookies (BookKeeper's recover and decommission): it marks every ledger
// that has any of them in a segment under-replicated, and runs a
// replication worker until no ledger names any of them. Autorecovery
// daemons, if any, share the work. It returns how many ledgers named them
// at the start, and refuses (ErrBookieRegistered) a bookie that is
// registered. It returns when ctx ends.
func RecoverBookies(ctx context.Context, cfg RecoverConfig, bookies []ledger.BookieID) (int, error) {
	st := cfg.Store
	reg, err := st.Bookies(ctx)
	if err != nil {
		return 0, fmt.Errorf("autorecovery: %w", err)
	}
	for _, b := range bookies {
		if err := b.Validate(); err != nil {
			return 0, err
		}
		if slices.Contains(reg.Writable, b) || slices.Contains(reg.ReadOnly, b) {
			return 0, fmt.Errorf("%w: %s", ErrBookieRegistered, b)
		}
	}
	mgr, err := NewManager(ctx, st, cfg.WorkerID)
	if err != nil {
		return 0, err
	}
	n, err := MarkBookies(ctx, st, mgr, bookies)
	if err != nil {
		return 0, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	d, err := Start(ctx, Config{Store: st, Client: cfg.Client, ID: cfg.WorkerID, NoAuditor: true,
		OpenLedgerRereplicationGracePeriod: cfg.OpenLedgerRereplicationGracePeriod,
		PollInterval:                       100 * time.Millisecond, Logger: logger})
	if err != nil {
		return 0, err
	}
	defer d.Close()
	t := time.NewTicker(recoverPoll)
	defer t.Stop()
	for {
		mds, err := readAll(ctx, st)
		left := ledgersOn(mds, func(b ledger.BookieID) bool { return slices.Contains(bookies, b) })
		if err == nil && len(left) == 0 {
			return n, nil
		}
		select {
		case <-ctx.Done():
			return n, fmt.Errorf("autorecovery: %d ledgers still name %v: %w", len(left), bookies, ctx.Err())
		case <-t.C:
		}
	}
}

// DeleteCookie deletes a decommissioned bookie's cookie, so that its id can
// be used again; a bookie without one is not an error.
func DeleteCookie(ctx context.Context, st *metadata.Store, b ledger.BookieID) error {
	err := st.DeleteNode(ctx, st.CookiePath(b), metadata.AnyVersion)
	if err != nil && !errors.Is(err, metadata.ErrNoNode) {
		return fmt.Errorf("autorecovery: delete the cookie of %s: %w", b, err)
	}
	return nil
}

// Operator answers the operators' calls about one cluster's autorecovery
// on a metadata store it does not own; the bookie's HTTP admin API uses it.
// Safe for concurrent use.
type Operator struct {
	store    *metadata.Store
	workerID string
	logger   *slog.Logger
	client   func() (*ledgerclient.Client, error)

	mu  sync.Mutex
	mgr *Manager
}

// NewOperator returns an Operator on store whose recoveries' locks name
// workerID; client gives the ledger client recoveries fence open ledgers
// with (nil: they wait for the ledgers' writers or other workers).
func NewOperator(store *metadata.Store, workerID string, logger *slog.Logger,
	client func() (*ledgerclient.Client, error)) *Operator {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Operator{store: store, workerID: workerID, logger: logger, client: client}
}

// manager returns the under-replication manager, made at first use (it
// creates the tree's LAYOUT if missing, as BookKeeper's does).
func (o *Operator) manager(ctx context.Context) (*Manager, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mgr == nil {
		m, err := NewManager(ctx, o.store, o.workerID)
		if err != nil {
			return nil, err
		}
		o.mgr = m
	}
	return o.mgr, nil
}

// UnderReplicated lists the marked ledgers that pass ReplicaFilter(including,
// excluding), ascending, with the bookies each misses.
func (o *Operator) UnderReplicated(ctx context.Context, including, excluding string) ([]int64, [][]string, error) {
	m, err := o.manager(ctx)
	if err != nil {
		return nil, nil, err
	}
	list, err := m.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	keep := ReplicaFilter(including, excluding)
	var ids []int64
	var missing [][]string
	for _, l := range list {
		if keep == nil || keep(l.Replicas) {
			ids, missing = append(ids, l.LedgerID), append(missing, l.Replicas)
		}
	}
	return ids, missing, nil
}

// CurrentAuditor is Manager.CurrentAuditor.
func (o *Operator) CurrentAuditor(ctx context.Context) (string, bool, error) {
	m, err := o.manager(ctx)
	if err != nil {
		return "", false, err
	}
	return m.CurrentAuditor(ctx)
}

// TriggerAudit is Manager.TriggerAudit.
func (o *Operator) TriggerAudit(ctx context.Context) error {
	m, err := o.manager(ctx)
	if err != nil {
		return err
	}
	return m.TriggerAudit(ctx)
}

// StoredDelay is Manager.StoredDelay.
func (o *Operator) StoredDelay(ctx context.Context) (int, error) {
	m, err := o.manager(ctx)
	if err != nil {
		return 0, err
	}
	return m.StoredDelay(ctx)
}

// SetDelay is Manager.SetDelay.
func (o *Operator) SetDelay(ctx context.Context, seconds int) error {
	m, err := o.manager(ctx)
	if err != nil {
		return err
	}
	return m.SetDelay(ctx, seconds)
}

// ReplicationEnabled is Manager.ReplicationEnabled.
func (o *Operator) ReplicationEnabled(ctx context.Context) (bool, error) {
	m, err := o.manager(ctx)
	if err != nil {
		return false, err
	}
	return m.ReplicationEnabled(ctx)
}

// SetReplicationEnabled enables or disables the workers; a switch already
// in that state is not an error.
func (o *Operator) SetReplicationEnabled(ctx context.Context, on bool) error {
	m, err := o.manager(ctx)
	if err != nil {
		return err
	}
	if on {
		err = m.Enable(ctx)
	} else {
		err = m.Disable(ctx)
	}
	if errors.Is(err, ErrAlreadySet) {
		return nil
	}
	return err
}

// RecoverBookies runs RecoverBookies, then deletes the bookies' cookies if
// asked (BookKeeper's decommission with delete_cookie).
func (o *Operator) RecoverBookies(ctx context.Context, bookies []ledger.BookieID, deleteCookies bool) error {
	var client *ledgerclient.Client
	if o.client != nil {
		c, err := o.client()
		if err != nil {
			return err
		}
		client = c
	}
	n, err := RecoverBookies(ctx, RecoverConfig{Store: o.store, Client: client, WorkerID: o.workerID, Logger: o.logger},
		bookies)
	if err != nil {
		return err
	}
	o.logger.Info("bookies recovered", "bookies", bookies, "ledgers", n)
	if !deleteCookies {
		return nil
	}
	for _, b := range bookies {
		if err := DeleteCookie(ctx, o.store, b); err != nil {
			return err
		}
	}
	return nil
}
