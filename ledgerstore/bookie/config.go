package bookie

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strings"
	"time"

	"keeper/coordination/zkclient"
	"keeper/internal/vfs"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookie/entrystore"
	"keeper/ledgerstore/bookie/httpadmin"
	"keeper/ledgerstore/bookie/journal"
	"keeper/ledgerstore/bookietls"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// Defaults, BookKeeper's unless a comment says otherwise (docs/bookkeeper-protocol.md §12).
const (
	// DefaultPort is bookiePort.
	DefaultPort = 3181
	// DefaultLedgersRoot is zkLedgersRootPath.
	DefaultLedgersRoot = "/ledgers"
	// DefaultZKSessionTimeout is zkTimeout (10 s).
	DefaultZKSessionTimeout = 10 * time.Second
	// DefaultFlushInterval is flushInterval: how often a checkpoint runs.
	DefaultFlushInterval = 10 * time.Second
	// DefaultDiskUsageThreshold is diskUsageThreshold: a ledger directory
	// above it is full.
	DefaultDiskUsageThreshold = 0.95
	// DefaultDiskUsageWarnThreshold is diskUsageWarnThreshold: above it
	// major compaction is suspended.
	DefaultDiskUsageWarnThreshold = 0.90
	// DefaultDiskCheckInterval is diskCheckInterval.
	DefaultDiskCheckInterval = 10 * time.Second
	// DefaultGCWaitTime is gcWaitTime (600 s).
	DefaultGCWaitTime = 600 * time.Second
	// DefaultMinorCompactionInterval is minorCompactionInterval (1 h).
	DefaultMinorCompactionInterval = time.Hour
	// DefaultMajorCompactionInterval is majorCompactionInterval (1 day).
	DefaultMajorCompactionInterval = 24 * time.Hour
	// DefaultJournalPageCacheFlushInterval is
	// journalPageCacheFlushIntervalMSec: with journalSyncData=false, how
	// often the journal is synced anyway.
	DefaultJournalPageCacheFlushInterval = time.Second
	// DefaultMaxPendingRequestsPerConn bounds the writes, and separately
	// the reads, one connection may have in progress (read from the socket,
	// response not yet written to it); the reader stops reading beyond it.
	// It is maxPendingAddRequestsPerThread's and
	// maxPendingReadRequestsPerThread's 10,000.
	DefaultMaxPendingRequestsPerConn = 10_000
	// DefaultMaxPendingRequestBytesPerConn bounds the bytes of one
	// connection's requests in progress, mostly add payloads held until
	// their batch is synced and answered. A journal batch carries what
	// arrives during one sync: at 1 GB/s and a 10 ms sync, 10 MB. keeper's
	// own bound.
	DefaultMaxPendingRequestBytesPerConn = 16 << 20
	// DefaultMaxUnsentBytesPerConn is the high-water mark of one
	// connection's responses not yet written to its socket: a few large
	// entries, on top of what the kernel's socket buffer (up to 4 MiB on
	// Linux) already holds. keeper's own bound.
	DefaultMaxUnsentBytesPerConn = 4 << 20
	// DefaultMaxPendingBytes bounds what all connections together hold in
	// requests in progress and unsent responses: sixteen connections at
	// their request bound. keeper's own bound.
	DefaultMaxPendingBytes = 256 << 20
	// DefaultStuckClientTimeout is how long a connection's responses may
	// make no progress into its socket before the bookie closes it. A
	// BookKeeper client fails a request after 5 s (addEntryTimeoutSec,
	// readEntryTimeoutSec), so a client silent for 30 s, six times that and
	// longer than any sane GC pause, has given up on everything it asked.
	DefaultStuckClientTimeout = 30 * time.Second
	// DefaultThrottleWait is dbStorage_maxThrottleTimeMs: how long an add
	// waits for a checkpoint to free the write cache before it is refused
	// with ETOOMANYREQUESTS.
	DefaultThrottleWait = 10 * time.Second
	// DefaultLongPollMaxWait caps a long-poll read's timeOut, so that a
	// client cannot park a request for days. keeper's own bound.
	DefaultLongPollMaxWait = 10 * time.Minute
)

// maxFrameLimit is the largest frame a bookie accepts whatever the
// configuration: an entry must fit in one journal record and one entry-log
// record, both bounded at 8 MiB, with room for the request around it.
const maxFrameLimit = entrystore.MaxEntryBytes - 64<<10

// Config configures a Bookie. The zero value of every field but
// JournalDirs and LedgerDirs is a sensible default. Fields carry the
// bookkeeper.conf key they come from (see ParseConfigFile).
type Config struct {
	// ListenAddr is where the bookie listens, host:port (bookiePort, and
	// listeningInterface's address). "" means ":3181". Port 0 picks a
	// free port (tests).
	ListenAddr string
	// BookieID is the bookie's identity (bookieId): its registration
	// znode, its cookie, and what ledger metadata names; BookKeeper's
	// character rules apply (ledger.BookieID.Validate). "" means
	// AdvertisedAddress (or the listener's host, or the first non-loopback
	// IPv4 address) joined with the listening port, as BookKeeper does.
	BookieID string
	// AdvertisedAddress is the host clients should dial
	// (advertisedAddress); it goes in the default BookieID and the
	// registration's endpoint.
	AdvertisedAddress string
	// MaxFrameBytes bounds a request frame (nettyMaxFrameSizeBytes). 0
	// means bkproto.DefaultMaxFrameBytes (5 MiB).
	MaxFrameBytes int
	// MaxPendingAddsPerConn bounds one connection's writes in progress
	// (ADD_ENTRY, WRITE_LAC and FORCE_LEDGER requests read from the socket
	// whose response is not yet written to it); at the bound the bookie
	// reads nothing more from the connection until one is written
	// (maxPendingAddRequestsPerThread; BookKeeper fails the excess with
	// ETOOMANYREQUESTS instead). 0 means DefaultMaxPendingRequestsPerConn;
	// negative means no count bound (BookKeeper's 0): the byte bounds below
	// still hold.
	MaxPendingAddsPerConn int
	// MaxPendingReadsPerConn is the same for every other request: reads,
	// fence reads, long polls, READ_LAC (maxPendingReadRequestsPerThread).
	MaxPendingReadsPerConn int
	// MaxPendingRequestBytesPerConn bounds the bytes of one connection's
	// requests in progress (each frame, plus requestReserveBytes): the
	// bookie reads no further request while they reach it
	// (maxPendingRequestBytesPerConnection). 0 means
	// DefaultMaxPendingRequestBytesPerConn.
	MaxPendingRequestBytesPerConn int64
	// MaxUnsentBytesPerConn is the high-water mark of one connection's
	// responses not yet written to its socket: above it the bookie reads
	// no further request from the connection and builds no further response
	// carrying entry data for it (maxUnsentResponseBytesPerConnection). A
	// single response may pass it. 0 means DefaultMaxUnsentBytesPerConn.
	MaxUnsentBytesPerConn int64
	// MaxPendingBytes bounds the bytes all connections together hold in
	// requests in progress and unsent responses (maxPendingConnectionBytes):
	// at the bound a connection reads its next request, or builds its next
	// response carrying entry data, only once it has nothing else in
	// flight, so that every client still moves. 0 means
	// DefaultMaxPendingBytes.
	MaxPendingBytes int64
	// StuckClientTimeout: a connection whose socket takes less than
	// writeChunkBytes of its responses in this long is closed, which frees
	// what it held (waitTimeoutOnResponseBackpressureMs; keeper always
	// closes, as closeChannelOnResponseTimeout=true does). 0 means
	// DefaultStuckClientTimeout.
	StuckClientTimeout time.Duration

	// FS holds the journal, entry logs, lastMark and cookie files. nil
	// means vfs.Default.
	FS vfs.FS
	// StoreConfig, if set, adjusts the entry store's configuration after
	// the bookie has derived it from this Config. Tests set the index's
	// filesystem through it (entrystore.Config.IndexFS, pebble's memory
	// filesystem next to a vfs.MemFS), which keeps pebble's types out of
	// this package.
	StoreConfig func(*entrystore.Config)
	// JournalDirs are the journal directories (journalDirectories). Ledger
	// L is journaled in JournalDirs[L mod n]. Required.
	JournalDirs []string
	// LedgerDirs are the ledger directories (ledgerDirectories). Required.
	LedgerDirs []string
	// IndexDir holds the entry index (indexDirectories, one directory);
	// "" means LedgerDirs[0].
	IndexDir string

	// JournalSyncDisabled is journalSyncData=false: adds are acknowledged
	// once their batch reaches the page cache, and the journal is synced
	// every JournalPageCacheFlushInterval. An acknowledged add can then be
	// lost with the machine.
	JournalSyncDisabled bool
	// JournalPageCacheFlushInterval: see JournalSyncDisabled. 0 means
	// DefaultJournalPageCacheFlushInterval.
	JournalPageCacheFlushInterval time.Duration
	// JournalMaxGroupWait is journalMaxGroupWaitMSec: the longest a batch
	// stays open while records keep arriving, and with
	// JournalWaitWhenQueueEmpty how long a lone record waits for company.
	// 0 means 2 ms; negative closes every batch at once.
	JournalMaxGroupWait time.Duration
	// JournalWaitWhenQueueEmpty is journalFlushWhenQueueEmpty=false,
	// BookKeeper's default: an idle journal holds a batch for
	// JournalMaxGroupWait before syncing it. false (keeper's default) syncs
	// a batch as soon as nothing more is queued; the records that arrive
	// during that sync make the next batch (natural group commit,
	// docs/bookkeeper-protocol.md §7.3).
	JournalWaitWhenQueueEmpty bool
	// JournalBufferedWritesThresholdBytes is
	// journalBufferedWritesThreshold. 0 means 512 KiB.
	JournalBufferedWritesThresholdBytes int64
	// JournalBufferedEntriesThreshold is journalBufferedEntriesThreshold:
	// a batch closes once it holds more records than this. 0 turns the
	// rule off.
	JournalBufferedEntriesThreshold int
	// JournalFormatVersion is the journal format written
	// (journalFormatVersionToWrite): 7 (keeper's, checksummed) or 6
	// (BookKeeper's). 0 means 7.
	JournalFormatVersion int
	// JournalMaxSizeBytes is journalMaxSizeMB. 0 means 2 GiB.
	JournalMaxSizeBytes int64
	// JournalPreAllocSizeBytes is journalPreAllocSizeMB. 0 means 16 MiB.
	JournalPreAllocSizeBytes int64
	// JournalAlignmentBytes is journalAlignmentSize. 0 means 512.
	JournalAlignmentBytes int
	// JournalMaxBackups is journalMaxBackups: journal files older than the
	// checkpoint kept anyway. 0 means 5; negative keeps none.
	JournalMaxBackups int
	// FlushInterval is flushInterval: how often a checkpoint flushes
	// ledger storage and lets old journal files go. A checkpoint also runs
	// whenever the write cache fills. 0 means DefaultFlushInterval.
	FlushInterval time.Duration
	// ThrottleWait: see DefaultThrottleWait. 0 means the default.
	ThrottleWait time.Duration
	// WriteCacheBytes, ReadCacheBytes and EntryLogMaxBytes tune the entry
	// store (dbStorage_writeCacheMaxSizeMb, dbStorage_readAheadCacheMaxSizeMb,
	// logSizeLimit); 0 means entrystore's defaults.
	WriteCacheBytes  int64
	ReadCacheBytes   int64
	EntryLogMaxBytes int64

	// DiskUsageThreshold is diskUsageThreshold: when every ledger
	// directory's usage is at or above it the bookie turns read-only. 0
	// means DefaultDiskUsageThreshold.
	DiskUsageThreshold float64
	// DiskUsageWarnThreshold is diskUsageWarnThreshold: above it major
	// compaction is suspended. 0 means DefaultDiskUsageWarnThreshold.
	DiskUsageWarnThreshold float64
	// DiskUsageLwmThreshold is diskUsageLwmThreshold: a read-only bookie
	// turns writable again once a ledger directory is below it. 0 means
	// DiskUsageThreshold.
	DiskUsageLwmThreshold float64
	// DiskCheckInterval is diskCheckInterval. 0 means
	// DefaultDiskCheckInterval.
	DiskCheckInterval time.Duration
	// ReadOnlyModeDisabled is readOnlyModeEnabled=false: a bookie whose
	// disks fill up (or whose journal or storage fails) shuts down
	// instead of turning read-only.
	ReadOnlyModeDisabled bool
	// DiskUsage reports a ledger directory's usage; nil means statfs(2).
	// Tests inject full disks through it.
	DiskUsage func(dir string) (entrystore.DirUsage, error)

	// GCWaitTime is gcWaitTime: how often deleted ledgers are collected.
	// 0 means DefaultGCWaitTime; negative disables the periodic run.
	GCWaitTime time.Duration
	// MinorCompactionThreshold (minorCompactionThreshold) and
	// MinorCompactionInterval (minorCompactionInterval): entry logs whose
	// live ratio is below the threshold are compacted this often. 0 means
	// the default (0.2, 1 h); a negative value of either disables minor
	// compaction (BookKeeper's 0).
	MinorCompactionThreshold float64
	MinorCompactionInterval  time.Duration
	// MajorCompactionThreshold and MajorCompactionInterval: the same for
	// major compaction (0.8, 1 day).
	MajorCompactionThreshold float64
	MajorCompactionInterval  time.Duration
	// CompactionStepBytes bounds the live bytes one compaction step
	// copies. 0 means entrystore.DefaultCompactStepBytes.
	CompactionStepBytes int64
	// ProgressInterval is how often a long step (the journal's replay at
	// start, a compaction) logs how far it is. 0 means
	// DefaultProgressInterval.
	ProgressInterval time.Duration

	// MetadataServers are the ZooKeeper (or keeper) servers, host:port
	// (zkServers, or the hosts of metadataServiceUri). Empty runs the
	// bookie without metadata: no registration, no cookies, no garbage
	// collection (tests and benchmarks only).
	MetadataServers []string
	// LedgersRoot is zkLedgersRootPath (or metadataServiceUri's path). ""
	// means DefaultLedgersRoot.
	LedgersRoot string
	// ZKSessionTimeout is zkTimeout. 0 means DefaultZKSessionTimeout.
	ZKSessionTimeout time.Duration
	// MetadataSecurity is the metadata session's TLS and SASL, as a
	// bookie's ZooKeeper client takes them from the -D flags of
	// BOOKIE_EXTRA_OPTS (zkclient.NewSecurity); the zero value is
	// plaintext without SASL.
	MetadataSecurity zkclient.Security

	// MetricsAddr is where Prometheus metrics are served over HTTP at
	// /metrics (prometheusStatsHttpAddress:prometheusStatsHttpPort); ""
	// disables them.
	MetricsAddr string
	// HTTPServerAddr is where the HTTP admin API is served
	// (httpServerHost:httpServerPort when httpServerEnabled=true;
	// docs/bookie-http.md); "" disables it.
	HTTPServerAddr string
	// Properties is the configuration as read from bookkeeper.conf, which
	// the admin API's server_config endpoint prints; ConfigFromProperties
	// sets it when the API is enabled. nil prints none.
	Properties map[string]string
	// HTTPRecovery makes the admin API's autorecovery calls on the bookie's
	// metadata store (autorecovery.NewOperator; the bookie does not import
	// autorecovery, whose tests run bookies). nil: those endpoints answer
	// 500.
	HTTPRecovery func(st *metadata.Store, bookieID string) httpadmin.Recovery
	// HTTPLedgers reads entries for the admin API's /api/v1/ledger/read (a
	// ledger client on MetadataServers, which the caller closes after the
	// bookie stops). nil: that endpoint answers 500.
	HTTPLedgers httpadmin.Ledgers
	// TLS is the bookie's TLS, from tlsProviderFactoryClass and the tls*
	// keys (docs/bookie-tls.md): with Enabled, a v3 client's START_TLS
	// gets EOK and a handshake; without, EBADREQ, as BookKeeper answers.
	// A client that never sends START_TLS is served in plain text either
	// way, as BookKeeper serves it. New loads the stores.
	TLS bookietls.Settings
	// ClientTLS is what the bookie's own ledger clients (autorecovery, the
	// admin API's) use towards bookies: the same keys read as BookKeeper's
	// ClientConfiguration reads them (clientKeyStore* and clientTrustStore*
	// before tlsKeyStore* and tlsTrustStore*). The bookie itself uses it
	// only for the admin API's list_bookie_info, which asks bookies too.
	ClientTLS bookietls.Settings
	// Logger receives the bookie's logs; nil discards them.
	Logger *slog.Logger
}

// Validate reports the first invalid field, naming its bookkeeper.conf
// key.
func (c Config) Validate() error {
	if len(c.JournalDirs) == 0 {
		return errors.New("bookie: journalDirectories: at least one journal directory is required")
	}
	if len(c.LedgerDirs) == 0 {
		return errors.New("bookie: ledgerDirectories: at least one ledger directory is required")
	}
	if err := checkDirs("journalDirectories", c.JournalDirs); err != nil {
		return err
	}
	if err := checkDirs("ledgerDirectories", c.LedgerDirs); err != nil {
		return err
	}
	if c.ListenAddr != "" {
		if _, _, err := net.SplitHostPort(c.ListenAddr); err != nil {
			return fmt.Errorf("bookie: bookiePort: listen address %q: %v", c.ListenAddr, err)
		}
	}
	if c.BookieID != "" {
		if err := ledger.BookieID(c.BookieID).Validate(); err != nil {
			return fmt.Errorf("bookie: bookieId: %w", err)
		}
	}
	if c.MaxFrameBytes < 0 || (c.MaxFrameBytes > 0 && c.MaxFrameBytes < 1024) || c.MaxFrameBytes > maxFrameLimit {
		return fmt.Errorf("bookie: nettyMaxFrameSizeBytes %d: want 1024 to %d", c.MaxFrameBytes, maxFrameLimit)
	}
	if err := c.validateLimits(); err != nil {
		return err
	}
	if c.LedgersRoot != "" && (!strings.HasPrefix(c.LedgersRoot, "/") || strings.HasSuffix(c.LedgersRoot, "/")) {
		return fmt.Errorf("bookie: zkLedgersRootPath %q: want an absolute znode path like /ledgers", c.LedgersRoot)
	}
	if err := c.validateDisks(); err != nil {
		return err
	}
	if err := c.validateCompaction(); err != nil {
		return err
	}
	if err := c.validateJournal(); err != nil {
		return err
	}
	if err := c.withDefaults().storeConfig().Validate(); err != nil {
		return fmt.Errorf("bookie: ledger storage: %w", err)
	}
	if err := c.journalConfig(0).Validate(); err != nil {
		return fmt.Errorf("bookie: journal settings: %w", err)
	}
	return nil
}

// validateJournal checks the journal settings, naming their keys.
func (c Config) validateJournal() error {
	a := c.JournalAlignmentBytes
	switch {
	case c.JournalFormatVersion != 0 && c.JournalFormatVersion != journal.FormatV6 && c.JournalFormatVersion != journal.FormatV7:
		return fmt.Errorf("bookie: journalFormatVersionToWrite %d: keeper writes 6 or 7", c.JournalFormatVersion)
	case a != 0 && (a < 512 || a > journal.MaxAlignmentBytes || a&(a-1) != 0):
		return fmt.Errorf("bookie: journalAlignmentSize %d: want a power of two from 512 to %d", a, journal.MaxAlignmentBytes)
	case c.JournalPreAllocSizeBytes < 0 || (c.JournalPreAllocSizeBytes > 0 && c.JournalPreAllocSizeBytes < int64(max(a, 512))):
		return fmt.Errorf("bookie: journalPreAllocSizeMB: %d bytes is below the alignment", c.JournalPreAllocSizeBytes)
	case c.JournalMaxSizeBytes < 0:
		return fmt.Errorf("bookie: journalMaxSizeMB: %d bytes is negative", c.JournalMaxSizeBytes)
	case c.JournalBufferedWritesThresholdBytes < 0:
		return fmt.Errorf("bookie: journalBufferedWritesThreshold %d is negative", c.JournalBufferedWritesThresholdBytes)
	case c.JournalBufferedEntriesThreshold < 0:
		return fmt.Errorf("bookie: journalBufferedEntriesThreshold %d is negative", c.JournalBufferedEntriesThreshold)
	}
	return nil
}

// validateLimits checks the connection limits, naming their keys.
func (c Config) validateLimits() error {
	switch {
	case c.MaxPendingRequestBytesPerConn < 0:
		return fmt.Errorf("bookie: maxPendingRequestBytesPerConnection %d is negative", c.MaxPendingRequestBytesPerConn)
	case c.MaxUnsentBytesPerConn < 0:
		return fmt.Errorf("bookie: maxUnsentResponseBytesPerConnection %d is negative", c.MaxUnsentBytesPerConn)
	case c.MaxPendingBytes < 0:
		return fmt.Errorf("bookie: maxPendingConnectionBytes %d is negative", c.MaxPendingBytes)
	case c.StuckClientTimeout < 0:
		return fmt.Errorf("bookie: waitTimeoutOnResponseBackpressureMs %v is negative", c.StuckClientTimeout)
	}
	return nil
}

// checkDirs rejects empty and repeated directory names.
func checkDirs(key string, dirs []string) error {
	seen := make(map[string]bool)
	for _, d := range dirs {
		if d == "" || seen[d] {
			return fmt.Errorf("bookie: %s: directory %q is empty or repeated", key, d)
		}
		seen[d] = true
	}
	return nil
}

func (c Config) validateDisks() error {
	d := c.withDefaults()
	switch {
	case d.DiskUsageThreshold <= 0 || d.DiskUsageThreshold > 1:
		return fmt.Errorf("bookie: diskUsageThreshold %v: want a fraction in (0, 1]", c.DiskUsageThreshold)
	case d.DiskUsageWarnThreshold <= 0 || d.DiskUsageWarnThreshold > 1:
		return fmt.Errorf("bookie: diskUsageWarnThreshold %v: want a fraction in (0, 1]", c.DiskUsageWarnThreshold)
	case d.DiskUsageWarnThreshold > d.DiskUsageThreshold:
		return fmt.Errorf("bookie: diskUsageWarnThreshold %v must not exceed diskUsageThreshold %v",
			d.DiskUsageWarnThreshold, d.DiskUsageThreshold)
	case d.DiskUsageLwmThreshold <= 0 || d.DiskUsageLwmThreshold > d.DiskUsageThreshold:
		return fmt.Errorf("bookie: diskUsageLwmThreshold %v: want a fraction in (0, diskUsageThreshold]",
			c.DiskUsageLwmThreshold)
	case c.DiskCheckInterval < 0:
		return fmt.Errorf("bookie: diskCheckInterval %v must not be negative", c.DiskCheckInterval)
	case c.FlushInterval < 0:
		return fmt.Errorf("bookie: flushInterval %v must not be negative", c.FlushInterval)
	case c.ZKSessionTimeout < 0:
		return fmt.Errorf("bookie: zkTimeout %v must not be negative", c.ZKSessionTimeout)
	}
	return nil
}

func (c Config) validateCompaction() error {
	d := c.withDefaults()
	switch {
	case d.MinorCompactionThreshold > 1:
		return fmt.Errorf("bookie: minorCompactionThreshold %v: want a fraction in [0, 1]", c.MinorCompactionThreshold)
	case d.MajorCompactionThreshold > 1:
		return fmt.Errorf("bookie: majorCompactionThreshold %v: want a fraction in [0, 1]", c.MajorCompactionThreshold)
	case d.minorEnabled() && d.majorEnabled() && d.MinorCompactionThreshold > d.MajorCompactionThreshold:
		return fmt.Errorf("bookie: minorCompactionThreshold %v must not exceed majorCompactionThreshold %v",
			d.MinorCompactionThreshold, d.MajorCompactionThreshold)
	case d.minorEnabled() && d.majorEnabled() && d.MinorCompactionInterval > d.MajorCompactionInterval:
		return fmt.Errorf("bookie: minorCompactionInterval %v must not exceed majorCompactionInterval %v",
			d.MinorCompactionInterval, d.MajorCompactionInterval)
	case c.CompactionStepBytes < 0:
		return fmt.Errorf("bookie: compaction step %d bytes must not be negative", c.CompactionStepBytes)
	case c.ProgressInterval < 0:
		return fmt.Errorf("bookie: progress interval %v must not be negative", c.ProgressInterval)
	}
	return nil
}

func (c Config) minorEnabled() bool {
	return c.MinorCompactionThreshold > 0 && c.MinorCompactionInterval > 0
}

func (c Config) majorEnabled() bool {
	return c.MajorCompactionThreshold > 0 && c.MajorCompactionInterval > 0
}

// withDefaults fills in the zero fields.
func (c Config) withDefaults() Config {
	if c.ListenAddr == "" {
		c.ListenAddr = fmt.Sprintf(":%d", DefaultPort)
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = bkproto.DefaultMaxFrameBytes
	}
	c.MaxPendingAddsPerConn = countLimit(c.MaxPendingAddsPerConn)
	c.MaxPendingReadsPerConn = countLimit(c.MaxPendingReadsPerConn)
	if c.MaxPendingRequestBytesPerConn == 0 {
		c.MaxPendingRequestBytesPerConn = DefaultMaxPendingRequestBytesPerConn
	}
	if c.MaxUnsentBytesPerConn == 0 {
		c.MaxUnsentBytesPerConn = DefaultMaxUnsentBytesPerConn
	}
	if c.MaxPendingBytes == 0 {
		c.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if c.StuckClientTimeout == 0 {
		c.StuckClientTimeout = DefaultStuckClientTimeout
	}
	if c.FS == nil {
		c.FS = vfs.Default
	}
	if c.JournalPageCacheFlushInterval <= 0 {
		c.JournalPageCacheFlushInterval = DefaultJournalPageCacheFlushInterval
	}
	if c.JournalMaxBackups == 0 {
		c.JournalMaxBackups = journal.DefaultMaxBackups
	}
	c.JournalMaxBackups = max(c.JournalMaxBackups, 0)
	if c.FlushInterval == 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.ThrottleWait <= 0 {
		c.ThrottleWait = DefaultThrottleWait
	}
	if c.DiskUsageThreshold == 0 {
		c.DiskUsageThreshold = DefaultDiskUsageThreshold
	}
	if c.DiskUsageWarnThreshold == 0 {
		c.DiskUsageWarnThreshold = min(DefaultDiskUsageWarnThreshold, c.DiskUsageThreshold)
	}
	if c.DiskUsageLwmThreshold == 0 {
		c.DiskUsageLwmThreshold = c.DiskUsageThreshold
	}
	if c.DiskCheckInterval == 0 {
		c.DiskCheckInterval = DefaultDiskCheckInterval
	}
	if c.GCWaitTime == 0 {
		c.GCWaitTime = DefaultGCWaitTime
	}
	c.MinorCompactionThreshold = orDefault(c.MinorCompactionThreshold, entrystore.MinorCompactionThreshold)
	c.MajorCompactionThreshold = orDefault(c.MajorCompactionThreshold, entrystore.MajorCompactionThreshold)
	if c.MinorCompactionInterval == 0 {
		c.MinorCompactionInterval = DefaultMinorCompactionInterval
	}
	if c.MajorCompactionInterval == 0 {
		c.MajorCompactionInterval = DefaultMajorCompactionInterval
	}
	if c.LedgersRoot == "" {
		c.LedgersRoot = DefaultLedgersRoot
	}
	if c.ZKSessionTimeout == 0 {
		c.ZKSessionTimeout = DefaultZKSessionTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = DefaultProgressInterval
	}
	return c
}

// countLimit resolves a per-connection request count: 0 is the default,
// negative is no bound.
func countLimit(n int) int {
	switch {
	case n == 0:
		return DefaultMaxPendingRequestsPerConn
	case n < 0:
		return math.MaxInt
	}
	return n
}

func orDefault(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// journalConfig returns the configuration of journal number i.
func (c Config) journalConfig(firstLogID int64) journal.Config {
	return journal.Config{
		FirstLogID:                   firstLogID,
		FormatVersion:                c.JournalFormatVersion,
		AlignmentBytes:               c.JournalAlignmentBytes,
		PreAllocSizeBytes:            c.JournalPreAllocSizeBytes,
		MaxSizeBytes:                 c.JournalMaxSizeBytes,
		MaxGroupWait:                 c.JournalMaxGroupWait,
		BufferedWritesThresholdBytes: c.JournalBufferedWritesThresholdBytes,
		BufferedEntriesThreshold:     c.JournalBufferedEntriesThreshold,
		WaitWhenQueueEmpty:           c.JournalWaitWhenQueueEmpty,
		MaxRecordBytes:               journal.DefaultMaxRecordBytes,
		Logger:                       c.Logger,
	}
}

// storeConfig returns the entry store's configuration.
func (c Config) storeConfig() entrystore.Config {
	sc := entrystore.Config{
		FS:               c.FS,
		Dirs:             c.LedgerDirs,
		IndexDir:         c.IndexDir,
		WriteCacheBytes:  c.WriteCacheBytes,
		ReadCacheBytes:   c.ReadCacheBytes,
		EntryLogMaxBytes: c.EntryLogMaxBytes,
		Logger:           c.Logger,
		DiskUsage:        c.DiskUsage,
		Clock:            time.Now, // the steps of reads and flushes (docs/observability.md)
	}
	if c.StoreConfig != nil {
		c.StoreConfig(&sc)
	}
	return sc
}
