package entrystore

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"

	"keeper/internal/vfs"
)

// Defaults for the zero Config fields.
const (
	// DefaultWriteCacheBytes is the whole write cache (both halves).
	DefaultWriteCacheBytes = 64 << 20
	// DefaultReadCacheBytes is the read-ahead cache.
	DefaultReadCacheBytes = 64 << 20
	// DefaultReadAheadBytes is how far past a missed entry a read looks
	// for the ledger's following entries.
	DefaultReadAheadBytes = 256 << 10
	// readAheadEntries bounds the entries one miss brings into the read
	// cache, as BookKeeper's dbStorage_readAheadCacheBatchSize does.
	readAheadEntries = 100
	// minEntryLogMaxBytes keeps a log able to hold a header and a record.
	minEntryLogMaxBytes = 4 << 10
)

// Compaction thresholds: BookKeeper's minorCompactionThreshold and
// majorCompactionThreshold. The driver passes one of them to Compact.
const (
	MinorCompactionThreshold = 0.2
	MajorCompactionThreshold = 0.8
)

// Config configures a Store. The zero value of every field but FS, Dirs
// and (unless FS is vfs.Default) IndexFS is a sensible default.
type Config struct {
	// FS holds the entry logs and lastId files.
	FS vfs.FS
	// Dirs are the ledger directories. Entry logs live in <dir>/current;
	// ledger L's entries go to Dirs[L mod len(Dirs)]. The order must not
	// change between runs (entries already written stay where they are,
	// but new ones would go elsewhere).
	Dirs []string
	// IndexDir holds the pebble index, in <IndexDir>/current/index. Empty
	// means Dirs[0].
	IndexDir string
	// IndexFS is the filesystem pebble uses. pebble has its own vfs
	// interface, so the index is outside keeper's vfs seam: pass
	// pebble's vfs.Default with vfs.Default, and pebble's crashable
	// MemFS in tests. nil means pebble's vfs.Default, allowed only when
	// FS is vfs.Default (so that a test never writes an index to disk by
	// mistake).
	IndexFS pvfs.FS
	// WriteCacheBytes is the write cache size; each half gets half of it.
	// 0 means DefaultWriteCacheBytes.
	WriteCacheBytes int64
	// ReadCacheBytes is the read-ahead cache size. 0 means
	// DefaultReadCacheBytes; negative disables the cache.
	ReadCacheBytes int64
	// ReadAheadBytes is how far past a missed entry a read looks for more
	// of the ledger's entries. 0 means DefaultReadAheadBytes; negative
	// disables read-ahead.
	ReadAheadBytes int64
	// EntryLogMaxBytes is the size at which an entry log is sealed and a
	// new one started. 0 means DefaultEntryLogMaxBytes, also the maximum.
	EntryLogMaxBytes int64
	// Logger receives warnings about repaired or damaged logs and pebble's
	// messages. nil discards.
	Logger *slog.Logger
	// DiskUsage reports a directory's filesystem usage. nil means statfs(2).
	DiskUsage func(dir string) (DirUsage, error)
	// Clock, when set, times the steps of reads and flushes into Stats
	// (docs/observability.md, "Ledger storage"). nil: the store reads no
	// clock and those figures stay empty.
	Clock func() time.Time
}

// IndexOnOS sets c's IndexFS to pebble's OS filesystem. A bookie whose FS
// wraps vfs.Default (a chaos build's fault injector) keeps its index on
// disk next to its entry logs this way.
func IndexOnOS(c *Config) { c.IndexFS = pvfs.Default }

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	switch {
	case c.FS == nil:
		return errors.New("entrystore: Config.FS is required")
	case len(c.Dirs) == 0:
		return errors.New("entrystore: Config.Dirs must name at least one ledger directory")
	case c.IndexFS == nil && c.FS != vfs.Default:
		return errors.New("entrystore: Config.IndexFS is required unless FS is vfs.Default")
	case c.WriteCacheBytes < 0:
		return fmt.Errorf("entrystore: WriteCacheBytes %d is negative", c.WriteCacheBytes)
	case c.EntryLogMaxBytes != 0 &&
		(c.EntryLogMaxBytes < minEntryLogMaxBytes || c.EntryLogMaxBytes > DefaultEntryLogMaxBytes):
		return fmt.Errorf("entrystore: EntryLogMaxBytes %d outside [%d, %d]",
			c.EntryLogMaxBytes, minEntryLogMaxBytes, DefaultEntryLogMaxBytes)
	}
	seen := make(map[string]bool)
	for _, d := range c.Dirs {
		if d == "" || seen[d] {
			return fmt.Errorf("entrystore: ledger directory %q is empty or repeated", d)
		}
		seen[d] = true
	}
	return nil
}

// withDefaults fills in the zero fields.
func (c Config) withDefaults() Config {
	if c.IndexDir == "" {
		c.IndexDir = c.Dirs[0]
	}
	if c.IndexFS == nil {
		c.IndexFS = pvfs.Default
	}
	if c.WriteCacheBytes == 0 {
		c.WriteCacheBytes = DefaultWriteCacheBytes
	}
	if c.ReadCacheBytes == 0 {
		c.ReadCacheBytes = DefaultReadCacheBytes
	}
	c.ReadCacheBytes = max(c.ReadCacheBytes, 0)
	if c.ReadAheadBytes == 0 {
		c.ReadAheadBytes = DefaultReadAheadBytes
	}
	c.ReadAheadBytes = max(c.ReadAheadBytes, 0)
	if c.EntryLogMaxBytes == 0 {
		c.EntryLogMaxBytes = DefaultEntryLogMaxBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.DiskUsage == nil {
		c.DiskUsage = statfsUsage
	}
	return c
}
