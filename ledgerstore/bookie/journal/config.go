package journal

import (
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"time"
)

// Defaults, from BookKeeper's bookie configuration (docs/bookkeeper-protocol.md §7.3, §12).
const (
	// DefaultAlignmentBytes is journalAlignmentSize: one disk sector.
	// Pulsar deployments use 4096.
	DefaultAlignmentBytes = 512
	// MaxAlignmentBytes bounds AlignmentBytes and, on read, a padding
	// record (less than two alignment units), so that a damaged pad length
	// cannot make a reader skip or check a large region.
	MaxAlignmentBytes = 64 << 10
	// DefaultPreAllocSizeBytes is journalPreAllocSizeMB (16 MB): files grow
	// ahead of the writes in steps this large, so that most syncs need not
	// update the file size.
	DefaultPreAllocSizeBytes = 16 << 20
	// DefaultMaxSizeBytes is journalMaxSizeMB (2048 MB): a file whose data
	// passes it is closed at the next Sync.
	DefaultMaxSizeBytes = 2 << 30
	// DefaultMaxRecordBytes bounds one record body, on append and on read.
	// It is above the largest frame BookKeeper (5 MiB) or Pulsar (5 MiB +
	// 10 KiB) accept by default, so every add the protocol lets through
	// fits, and small enough that a damaged length field cannot make a
	// reader allocate gigabytes.
	DefaultMaxRecordBytes = 8 << 20
	// DefaultWriteBufferBytes is journalWriteBufferSizeKB (64 KB): appended
	// bytes are written to the file, without syncing, once this many are
	// buffered, which bounds the memory a large batch holds.
	DefaultWriteBufferBytes = 64 << 10
	// DefaultMaxGroupWait is journalMaxGroupWaitMSec (2 ms). With keeper's
	// natural group commit it only bounds how long records that keep
	// arriving can hold a batch open; with WaitWhenQueueEmpty it is how
	// long an idle journal's batch waits for company, BookKeeper's timer.
	DefaultMaxGroupWait = 2 * time.Millisecond
	// DefaultBufferedWritesThresholdBytes is journalBufferedWritesThreshold
	// (512 KiB).
	DefaultBufferedWritesThresholdBytes = 512 << 10
	// DefaultMaxBackups is journalMaxBackups: how many journal files wholly
	// before the log mark RemoveBefore keeps.
	DefaultMaxBackups = 5
)

// Config configures a Journal and the readers. The zero value is
// BookKeeper's defaults but for two: it writes FormatV7, and a batch
// closes as soon as the driver's queue is empty (natural group commit,
// journalFlushWhenQueueEmpty=true) instead of waiting MaxGroupWait.
type Config struct {
	// FirstLogID is the log id of the first file when the directory holds
	// none; later files take the next ids. A new file's id is also never
	// below it, so a caller that passes the current time in milliseconds
	// (as BookKeeper does) gets ids that grow across restarts even if the
	// journal files were lost. 0 means 1.
	FirstLogID int64
	// FormatVersion is the format new files are written in: FormatV7
	// (checksummed) or FormatV6 (BookKeeper's). 0 means DefaultFormat.
	// Readers accept FormatV5, FormatV6 and FormatV7 whatever this says.
	FormatVersion int
	// AlignmentBytes is the boundary every flush pads the file to
	// (journalAlignmentSize): a power of two from 512 to
	// MaxAlignmentBytes. 0 means DefaultAlignmentBytes.
	AlignmentBytes int
	// PreAllocSizeBytes is the step by which a file grows ahead of the
	// writes, rounded down to a multiple of AlignmentBytes. 0 means
	// DefaultPreAllocSizeBytes.
	PreAllocSizeBytes int64
	// MaxSizeBytes: a Sync after which the current file's data passes it
	// closes the file; the next Append starts a new one. 0 means
	// DefaultMaxSizeBytes.
	MaxSizeBytes int64
	// MaxRecordBytes bounds one record body on append and on read. 0 means
	// DefaultMaxRecordBytes.
	MaxRecordBytes int
	// WriteBufferBytes: Append writes the buffered bytes to the file (not
	// syncing) once this many are buffered. 0 means DefaultWriteBufferBytes.
	WriteBufferBytes int

	// MaxGroupWait closes a batch once its oldest record has waited this
	// long (journalMaxGroupWaitMSec). 0 means DefaultMaxGroupWait;
	// negative closes every batch as soon as it has a record.
	MaxGroupWait time.Duration
	// BufferedWritesThresholdBytes closes a batch once more bytes than
	// this were appended since the last Flush. 0 means
	// DefaultBufferedWritesThresholdBytes.
	BufferedWritesThresholdBytes int64
	// BufferedEntriesThreshold closes a batch once it holds more records
	// than this (journalBufferedEntriesThreshold). 0 turns the rule off.
	BufferedEntriesThreshold int
	// WaitWhenQueueEmpty is journalFlushWhenQueueEmpty=false, BookKeeper's
	// default: a batch whose driver has nothing more queued stays open
	// until one of the rules above closes it, so a lone record waits
	// MaxGroupWait before its sync. false (keeper's default) closes a
	// batch as soon as the driver's queue is empty: an idle journal syncs
	// a record at once, and the records that arrive during that sync make
	// the next batch (natural group commit, as keeper's ZooKeeper
	// transaction log does). Under load both group about equally; idle,
	// waiting only adds latency.
	WaitWhenQueueEmpty bool

	// Logger receives a warning when Open cuts a torn tail and when Replay
	// skips a record of an unknown kind. nil discards.
	Logger *slog.Logger
}

// maxRecordLimit is the largest body an int32 length can describe.
const maxRecordLimit = 1<<31 - 1

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	switch {
	case c.FirstLogID < 0:
		return errors.New("journal: FirstLogID must not be negative")
	case c.FormatVersion != 0 && c.FormatVersion != FormatV6 && c.FormatVersion != FormatV7:
		return fmt.Errorf("journal: FormatVersion %d: keeper writes %d or %d", c.FormatVersion, FormatV6, FormatV7)
	case c.AlignmentBytes != 0 && (c.AlignmentBytes < 512 || c.AlignmentBytes > MaxAlignmentBytes ||
		bits.OnesCount(uint(c.AlignmentBytes)) != 1):
		return fmt.Errorf("journal: AlignmentBytes %d: want a power of two from 512 to %d", c.AlignmentBytes, MaxAlignmentBytes)
	case c.PreAllocSizeBytes < 0 || c.MaxSizeBytes < 0 || c.WriteBufferBytes < 0 ||
		c.BufferedWritesThresholdBytes < 0 || c.BufferedEntriesThreshold < 0:
		return errors.New("journal: sizes and thresholds must not be negative")
	case c.MaxRecordBytes < 0 || (c.MaxRecordBytes > 0 && c.MaxRecordBytes < IDsBytes) || c.MaxRecordBytes > maxRecordLimit:
		return fmt.Errorf("journal: MaxRecordBytes %d: want 0 or %d to %d", c.MaxRecordBytes, IDsBytes, maxRecordLimit)
	}
	align := int64(c.withDefaults().AlignmentBytes)
	if c.PreAllocSizeBytes != 0 && c.PreAllocSizeBytes < align {
		return fmt.Errorf("journal: PreAllocSizeBytes %d is below AlignmentBytes %d", c.PreAllocSizeBytes, align)
	}
	return nil
}

// withDefaults fills in the zero fields.
func (c Config) withDefaults() Config {
	if c.FirstLogID == 0 {
		c.FirstLogID = 1
	}
	if c.FormatVersion == 0 {
		c.FormatVersion = DefaultFormat
	}
	if c.AlignmentBytes == 0 {
		c.AlignmentBytes = DefaultAlignmentBytes
	}
	if c.PreAllocSizeBytes == 0 {
		c.PreAllocSizeBytes = DefaultPreAllocSizeBytes
	}
	c.PreAllocSizeBytes -= c.PreAllocSizeBytes % int64(c.AlignmentBytes)
	if c.MaxSizeBytes == 0 {
		c.MaxSizeBytes = DefaultMaxSizeBytes
	}
	if c.MaxRecordBytes == 0 {
		c.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if c.WriteBufferBytes == 0 {
		c.WriteBufferBytes = DefaultWriteBufferBytes
	}
	if c.MaxGroupWait == 0 {
		c.MaxGroupWait = DefaultMaxGroupWait
	}
	if c.BufferedWritesThresholdBytes == 0 {
		c.BufferedWritesThresholdBytes = DefaultBufferedWritesThresholdBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
