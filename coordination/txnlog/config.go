package txnlog

import (
	"errors"
	"log/slog"

	"keeper/coordination/jute"
	"keeper/coordination/txn"
)

// DefaultPreAllocSizeBytes is ZooKeeper's default zookeeper.preAllocSize
// (65536 KB). Preallocating keeps fdatasync from having to update the file
// size on most syncs.
const DefaultPreAllocSizeBytes = 64 << 20

// DefaultMaxRecordBytes bounds a payload as ZooKeeper's own log reader does
// with default settings: jute.maxbuffer plus 1 KB of slack for the txn
// header, path and digest around a maximal data buffer. It also stops a
// damaged length field from making a reader allocate gigabytes.
const DefaultMaxRecordBytes = jute.DefaultMaxBuffer + 1024

// Config configures a Log and the readers. The zero value is ZooKeeper's
// defaults.
type Config struct {
	// PreAllocSizeBytes is the step by which a log file grows ahead of the
	// writes (zookeeper.preAllocSize). 0 means DefaultPreAllocSizeBytes;
	// negative disables preallocation.
	PreAllocSizeBytes int64
	// MaxRecordBytes bounds one payload, on append and on read (and every
	// buffer inside it when it is decoded). 0 means DefaultMaxRecordBytes.
	MaxRecordBytes int
	// NoSync is ZooKeeper's forceSync=no: Sync writes the appended txns
	// to the file but does not wait for the disk (no fdatasync), so a
	// crash of the machine, not only of the process, can lose txns
	// already acknowledged. Roll, Truncate and Close still sync.
	NoSync bool
	// Logger receives a warning when Open repairs a torn tail or removes
	// an empty log file. nil discards.
	Logger *slog.Logger
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.MaxRecordBytes < 0 || (c.MaxRecordBytes > 0 && c.MaxRecordBytes < txn.HeaderSize) {
		return errors.New("txnlog: MaxRecordBytes must be 0 or at least a txn header")
	}
	return nil
}

// withDefaults fills in the zero fields.
func (c Config) withDefaults() Config {
	if c.PreAllocSizeBytes == 0 {
		c.PreAllocSizeBytes = DefaultPreAllocSizeBytes
	}
	if c.MaxRecordBytes == 0 {
		c.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}
