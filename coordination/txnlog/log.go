package txnlog

import (
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"path/filepath"

	"keeper/coordination/txn"
	"keeper/coordination/zxid"
	"keeper/internal/durablelog"
	"keeper/internal/invariants"
	"keeper/internal/vfs"
)

// writeBufferBytes bounds the appended bytes held in memory before they are
// written out, so that a caller appending many txns between syncs does not
// grow the buffer without limit. Syncs normally come far sooner.
const writeBufferBytes = 256 << 10

// Log appends txns to the log in one directory, as ZooKeeper's FileTxnLog
// does: buffered appends, and a Sync that makes them durable. It is not
// safe for concurrent use; the caller owns it from one goroutine and drives
// group commit by appending every txn that is ready, then calling Sync
// once for all of them.
//
// After any write, sync or file-system failure the Log is poisoned: the
// on-disk state after a failed fsync is unknown, so the Log never retries
// and every later call returns the same error. The owner must stop and
// recover by reopening (which rereads what is really on disk).
type Log struct {
	fsys     vfs.FS
	dir      string // dataLogDir/version-2
	cfg      Config
	last     zxid.ID
	cur      *durablelog.Appender // nil until the first Append after Open, Roll or Truncate
	appended int64                // bytes of records appended to cur
	err      error                // sticky
	closed   bool
}

// Open opens the log in dataLogDir (creating dataLogDir/version-2 if
// needed) for appending. It first repairs a torn tail, removes trailing
// files without records, and checks the last file in full, which sets
// LastZxid. The first Append starts a new file, as ZooKeeper does after a
// restart; existing files are never appended to.
func Open(fsys vfs.FS, dataLogDir string, cfg Config) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	dir := filepath.Join(dataLogDir, DirName)
	if err := vfs.MkdirAllSync(fsys, dir, 0o755); err != nil {
		return nil, fmt.Errorf("txnlog: create %s: %w", dir, err)
	}
	torn, err := repairTornTail(fsys, dir, cfg)
	if err != nil {
		return nil, err
	}
	if torn != nil {
		cfg.Logger.Warn("cut torn tail off txn log", "file", torn.File, "offset", torn.Offset, "reason", torn.Reason)
	}
	last, err := recoverLast(fsys, dir, cfg)
	if err != nil {
		return nil, err
	}
	return &Log{fsys: fsys, dir: dir, cfg: cfg, last: last}, nil
}

// LastZxid returns the zxid of the last txn appended (synced or not), or
// after Open the last one on disk; 0 for an empty log.
func (l *Log) LastZxid() zxid.ID { return l.last }

// Err returns the error that poisoned the log, or nil.
func (l *Log) Err() error { return l.err }

// usable returns the error every call returns on a closed or poisoned log.
func (l *Log) usable() error {
	if l.closed {
		return ErrClosed
	}
	return l.err
}

// poison records err as the sticky error and returns it.
func (l *Log) poison(err error) error {
	if l.err == nil {
		l.err = err
	}
	return l.err
}

// Append encodes t and appends it; see AppendPayload.
func (l *Log) Append(t *txn.Txn) error {
	if err := l.usable(); err != nil {
		return err
	}
	return l.AppendPayload(txn.Marshal(t))
}

// AppendPayload appends one encoded txn (as txn.Marshal returns it; the log
// keeps a copy). It is buffered: nothing is durable before Sync returns
// nil. The txn's zxid must be above LastZxid; a payload that breaks that,
// or is too short or too long, is refused with an error that does not
// poison the log, since nothing was written.
func (l *Log) AppendPayload(payload []byte) error {
	if err := l.usable(); err != nil {
		return err
	}
	if len(payload) < txn.HeaderSize || len(payload) > l.cfg.MaxRecordBytes {
		return fmt.Errorf("txnlog: append: payload of %d bytes, want %d to %d",
			len(payload), txn.HeaderSize, l.cfg.MaxRecordBytes)
	}
	z := payloadZxid(payload)
	if z <= l.last {
		return fmt.Errorf("txnlog: append zxid %v after %v: zxids must increase", z, l.last)
	}
	if invariants.Enabled {
		if _, err := txn.Unmarshal(payload, l.cfg.MaxRecordBytes); err != nil {
			return fmt.Errorf("txnlog: append zxid %v: payload does not decode: %w", z, err)
		}
	}
	if l.cur == nil {
		if err := l.startFile(z); err != nil {
			return l.poison(err)
		}
	}
	if err := l.preallocate(); err != nil {
		return l.poison(err)
	}
	var h [recordHeaderBytes]byte
	binary.BigEndian.PutUint64(h[0:8], uint64(adler32.Checksum(payload)))
	binary.BigEndian.PutUint32(h[8:12], uint32(len(payload)))
	l.cur.Append(h[:], payload, endOfRecord[:])
	l.appended += int64(RecordOverheadBytes + len(payload))
	l.last = z
	if l.cur.Buffered() >= writeBufferBytes {
		if err := l.cur.Flush(); err != nil {
			return l.poison(err)
		}
	}
	return nil
}

// endOfRecord is the byte that ends every record.
var endOfRecord = [1]byte{EndOfRecord}

// startFile creates the file for a txn with zxid z and buffers its header.
// Open removed every file without records, and zxids increase, so a file
// of this name already there can only be left from something else going
// wrong: durablelog.Create refuses it.
func (l *Log) startFile(z zxid.ID) error {
	a, err := durablelog.Create(l.fsys, l.dir, FileName(z), "txnlog")
	if err != nil {
		return err
	}
	l.cur, l.appended = a, 0
	a.Append(fileHeader[:])
	return nil
}

// preallocate grows the file ahead of the next record, as ZooKeeper's
// FilePadding does: by writing one zero byte at the new size minus one.
// Its currentSize starts at the header's size.
func (l *Log) preallocate() error {
	c := l.cur
	size := max(c.Size(), FileHeaderBytes)
	grown := paddedSize(c.Offset(), size, l.cfg.PreAllocSizeBytes)
	if grown == size {
		return nil // also with preallocation off: the header's 16 bytes are not written twice
	}
	return c.Preallocate(grown, 1)
}

// Sync writes out the buffered txns and makes every txn appended so far
// durable: fdatasync, or fsync when the file's size changed since the last
// sync, and then, for a new file, fsync of the directory. A write may be
// acknowledged once the Sync after its Append returns nil. This is the
// group-commit point: one Sync covers any number of Appends. With
// Config.NoSync it only writes them to the file.
func (l *Log) Sync() error { return l.syncFile(l.cfg.NoSync) }

// sync is Sync without Config.NoSync's exception.
func (l *Log) sync() error { return l.syncFile(false) }

// syncFile syncs the current file, or with flushOnly only writes the
// buffered txns to it.
func (l *Log) syncFile(flushOnly bool) error {
	if err := l.usable(); err != nil {
		return err
	}
	if l.cur == nil {
		return nil
	}
	finish := l.cur.Sync
	if flushOnly {
		finish = l.cur.Flush
	}
	if err := finish(); err != nil {
		return l.poison(err)
	}
	return nil
}

// Roll syncs the current file and closes it; the next Append starts a new
// file. ZooKeeper rolls the log when it starts a snapshot. Syncing here
// keeps a rule the reader relies on: every file but the last is complete.
func (l *Log) Roll() error {
	if err := l.sync(); err != nil {
		return err
	}
	return l.closeFile()
}

func (l *Log) closeFile() error {
	if l.cur == nil {
		return nil
	}
	c := l.cur
	l.cur = nil
	if err := c.Close(); err != nil {
		return l.poison(err)
	}
	return nil
}

// BytesSinceRoll returns how many bytes of records have been appended to
// the current file (0 right after Open, Roll or Truncate); ZooKeeper uses
// the log's size to decide when to snapshot.
func (l *Log) BytesSinceRoll() int64 {
	if l.cur == nil {
		return 0
	}
	return l.appended
}

// Truncate removes every txn above z (see the package function Truncate),
// after syncing what was appended. LastZxid becomes the last zxid left.
// The next Append starts a new file. Zab's TRUNC uses it.
func (l *Log) Truncate(z zxid.ID) error {
	if err := l.sync(); err != nil {
		return err
	}
	if err := l.closeFile(); err != nil {
		return err
	}
	if err := truncateLog(l.fsys, l.dir, z, l.cfg); err != nil {
		return l.poison(err)
	}
	last, err := recoverLast(l.fsys, l.dir, l.cfg)
	if err != nil {
		return l.poison(err)
	}
	l.last = last
	return nil
}

// Close syncs what was appended and closes the file. On a poisoned log it
// only closes, and returns the poison. Later calls return ErrClosed.
func (l *Log) Close() error {
	if l.closed {
		return ErrClosed
	}
	err := l.sync()
	if l.cur != nil {
		if closeErr := l.cur.Close(); err == nil {
			err = closeErr
		}
		l.cur = nil
	}
	l.closed = true
	return err
}
