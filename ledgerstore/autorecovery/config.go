package autorecovery

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/metadata"
)

// Defaults: BookKeeper's, where it has the setting.
const (
	// DefaultLostBookieRecoveryDelay is lostBookieRecoveryDelay's default:
	// mark at once.
	DefaultLostBookieRecoveryDelay = 0
	// DefaultAuditorPeriodicCheckInterval is auditorPeriodicCheckInterval's
	// default, a week.
	DefaultAuditorPeriodicCheckInterval = 7 * 24 * time.Hour
	// DefaultAuditorPeriodicBookieCheckInterval is
	// auditorPeriodicBookieCheckInterval's default, a day.
	DefaultAuditorPeriodicBookieCheckInterval = 24 * time.Hour
	// DefaultOpenLedgerRereplicationGracePeriod is
	// openLedgerRereplicationGracePeriod's default.
	DefaultOpenLedgerRereplicationGracePeriod = 30 * time.Second
	// DefaultRereplicateBackoff is rwRereplicateBackoffMs's default.
	DefaultRereplicateBackoff = 5 * time.Second
	// DefaultEntryBatchSize is rereplicationEntryBatchSize's default.
	DefaultEntryBatchSize = 100
	// DefaultPollInterval is how often an idle worker looks for markers
	// (keeper's: BookKeeper's workers watch the whole marker tree).
	DefaultPollInterval = time.Second
)

// maxEntryBatchSize bounds EntryBatchSize: each entry in flight holds its
// body (up to the bookie's frame limit) and a goroutine.
const maxEntryBatchSize = 10_000

// Config configures a Daemon.
type Config struct {
	// Store is the metadata store; its session carries the votes and
	// locks. Required.
	Store *metadata.Store
	// Client recovers open ledgers whose grace period ran out; without
	// one, those ledgers wait for their writer or another worker.
	Client *ledgerclient.Client
	// ID names this process in its vote and its locks: the bookie id of a
	// bookie's daemon, host:port or a host name otherwise. Required.
	ID string

	// LostBookieRecoveryDelay is how long a bookie must stay gone before
	// the auditor marks its ledgers, in whole seconds; the value stored in
	// the tree, if any, wins (and changes to it apply at once).
	LostBookieRecoveryDelay time.Duration
	// AuditorPeriodicCheckInterval is how often the auditor checks every
	// ledger's segments against the bookies (0: never; negative: the
	// default).
	AuditorPeriodicCheckInterval time.Duration
	// AuditorPeriodicBookieCheckInterval is how often the auditor marks
	// the ledgers of every bookie gone, delay or not (0: never; negative:
	// the default).
	AuditorPeriodicBookieCheckInterval time.Duration
	// AuditorPeriodicPlacementPolicyCheckInterval is how often the auditor
	// counts the closed ledgers whose ensembles do not meet Placement (0:
	// never, BookKeeper's default).
	AuditorPeriodicPlacementPolicyCheckInterval time.Duration
	// OpenLedgerRereplicationGracePeriod is how long a worker leaves an
	// open ledger's last segment to its writer (0: the default).
	OpenLedgerRereplicationGracePeriod time.Duration
	// RereplicateBackoff is how long a worker keeps a ledger it failed to
	// replicate before another try (0: the default).
	RereplicateBackoff time.Duration
	// PollInterval is how often an idle worker looks for work (0: the
	// default).
	PollInterval time.Duration
	// EntryBatchSize bounds the entries one worker copies at once (0: the
	// default).
	EntryBatchSize int
	// Auditor and Worker say which parts run; the zero value runs both
	// (a Daemon with neither is refused).
	NoAuditor, NoWorker bool
	// Placement chooses the bookie that replaces a lost one (the zero
	// value: BookKeeper's default, the rack-aware policy), and the
	// auditor's placement check asks it whether an ensemble adheres.
	Placement ledger.PlacementPolicy
	// Racks places bookies in racks statically; it wins over the rack
	// document at RackInfoPath ("" reads none).
	Racks        map[ledger.BookieID]string
	RackInfoPath string
	// Seed seeds the choice of targets (0: from the clock).
	Seed uint64
	// Logger receives the daemon's logs; nil discards them.
	Logger *slog.Logger
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Store == nil:
		return errors.New("autorecovery: no metadata store")
	case c.ID == "":
		return errors.New("autorecovery: no id for the votes and locks")
	case c.LostBookieRecoveryDelay < 0 || c.LostBookieRecoveryDelay%time.Second != 0 ||
		c.LostBookieRecoveryDelay > (1<<31-1)*time.Second:
		return fmt.Errorf("autorecovery: lostBookieRecoveryDelay %v: want whole seconds, not negative",
			c.LostBookieRecoveryDelay)
	case c.OpenLedgerRereplicationGracePeriod < 0 || c.RereplicateBackoff < 0 || c.PollInterval < 0 ||
		c.AuditorPeriodicPlacementPolicyCheckInterval < 0:
		return errors.New("autorecovery: negative duration")
	case c.EntryBatchSize < 0 || c.EntryBatchSize > maxEntryBatchSize:
		return fmt.Errorf("autorecovery: rereplicationEntryBatchSize %d: want 1 to %d", c.EntryBatchSize, maxEntryBatchSize)
	case c.NoAuditor && c.NoWorker:
		return errors.New("autorecovery: neither auditor nor worker")
	}
	if err := c.Placement.Validate(); err != nil {
		return fmt.Errorf("autorecovery: %w", err)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.AuditorPeriodicCheckInterval < 0 {
		c.AuditorPeriodicCheckInterval = DefaultAuditorPeriodicCheckInterval
	}
	if c.AuditorPeriodicBookieCheckInterval < 0 {
		c.AuditorPeriodicBookieCheckInterval = DefaultAuditorPeriodicBookieCheckInterval
	}
	if c.OpenLedgerRereplicationGracePeriod == 0 {
		c.OpenLedgerRereplicationGracePeriod = DefaultOpenLedgerRereplicationGracePeriod
	}
	if c.RereplicateBackoff == 0 {
		c.RereplicateBackoff = DefaultRereplicateBackoff
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.EntryBatchSize == 0 {
		c.EntryBatchSize = DefaultEntryBatchSize
	}
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
