package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"time"

	"keeper/internal/durablelog"
	"keeper/internal/vfs"
)

// Journal appends records to the journal in one directory. It does no
// I/O on its own schedule and starts no goroutines: the bookie driver runs
// the group-commit loop (docs/bookkeeper-protocol.md §7.3), as its owner from one goroutine:
//
//  1. Append each queued record (after inserting entries into ledger
//     storage, docs/bookkeeper-protocol.md §7.2).
//  2. When ShouldFlush says the batch is closed, Flush it, then Sync.
//  3. Acknowledge the batch's adds (and fences) only after Sync returns nil.
//
// Records queued while a Sync runs form the next batch, so syncs coalesce
// under load. Flush without Sync is the journalSyncData=false mode: the
// data reaches the page cache only.
//
// It is not safe for concurrent use. After any write, sync or filesystem
// failure the Journal is poisoned: the on-disk state after a failed fsync
// is unknown, so it never retries, and every later call returns the same
// error. The owner must stop, and recover by reopening and replaying.
type Journal struct {
	fsys vfs.FS
	dir  string // journalDir/current
	cfg  Config

	nextLogID int64
	cur       *durablelog.Appender // nil until the first Append after Open or a roll
	curID     int64                // cur's log id
	mark      Position             // everything before it is durable

	unflushedBytes   int64 // appended since the last Flush, framing included
	unflushedRecords int

	err    error // sticky
	closed bool
}

// Open opens the journal under journalDir for appending, creating
// journalDir/current if needed. It first cuts a torn tail off the last
// file (see the package doc) and checks that file in full; corruption
// there is returned. Existing files are never appended to: the first
// Append starts a new file, whose log id follows the last one's (and is
// at least cfg.FirstLogID).
func Open(fsys vfs.FS, journalDir string, cfg Config) (*Journal, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	dir := filepath.Join(journalDir, DirName)
	if err := vfs.MkdirAllSync(fsys, dir, 0o755); err != nil {
		return nil, fmt.Errorf("journal: create %s: %w", dir, err)
	}
	mark, files, err := recoverTail(fsys, dir, cfg)
	if err != nil {
		return nil, err
	}
	next := cfg.FirstLogID
	if len(files) > 0 {
		last := files[len(files)-1].LogID
		if last == math.MaxInt64 {
			return nil, fmt.Errorf("journal: %s: no log id left after %#x", dir, last)
		}
		next = max(next, last+1)
	}
	return &Journal{fsys: fsys, dir: dir, cfg: cfg, nextLogID: next, mark: mark}, nil
}

// Mark returns the log mark: every record before it is durable. A
// checkpoint captures it BEFORE flushing ledger storage, and persists it
// with WriteLastMark only after storage is durable (docs/bookkeeper-protocol.md §7.3, Appendix A
// item 8). Right after Open it is where the data already in the journal
// ends, which covers records only Replay puts back into storage: the
// driver must replay (from the persisted mark) before its first
// checkpoint. It only moves forward.
func (j *Journal) Mark() Position { return j.mark }

// Err returns the error that poisoned the journal, or nil.
func (j *Journal) Err() error { return j.err }

// usable returns the error every call returns on a closed or poisoned
// journal.
func (j *Journal) usable() error {
	if j.closed {
		return ErrClosed
	}
	return j.err
}

// poison records err as the sticky error and returns it.
func (j *Journal) poison(err error) error {
	if j.err == nil {
		j.err = err
	}
	return j.err
}

// Append adds rec to the current batch and returns the position just past
// it: rec is durable once Mark reaches that position, which a nil Sync
// guarantees. The journal keeps a copy of the body. Append buffers (it
// writes to the file without syncing only when WriteBufferBytes are
// buffered). A record that is too large, or of a kind that is never
// written (KindUnknown, the force-ledger marker), is refused without
// poisoning the journal.
func (j *Journal) Append(rec Record) (Position, error) {
	if err := j.usable(); err != nil {
		return Position{}, err
	}
	if err := j.checkRecord(rec); err != nil {
		return Position{}, err
	}
	if j.cur == nil {
		if err := j.startFile(); err != nil {
			return Position{}, j.poison(err)
		}
	}
	version := int32(j.cfg.FormatVersion)
	var h [8]byte
	hb := appendRecordHeaderOf(h[:0], version, rec)
	j.cur.Append(hb, rec.body)
	j.unflushedBytes += int64(len(hb) + len(rec.body))
	j.unflushedRecords++
	pos := Position{LogID: j.curID, Offset: j.cur.Offset()}
	if j.cur.Buffered() >= j.cfg.WriteBufferBytes {
		if err := j.writeOut(); err != nil {
			return Position{}, err
		}
	}
	return pos, nil
}

// checkRecord refuses a record that can never be written.
func (j *Journal) checkRecord(rec Record) error {
	if _, err := DecodeRecord(rec.body); err != nil {
		return err
	}
	if len(rec.body) > j.cfg.MaxRecordBytes {
		return fmt.Errorf("journal: append: record of %d bytes above the limit %d", len(rec.body), j.cfg.MaxRecordBytes)
	}
	if rec.Kind() == KindUnknown {
		return fmt.Errorf("journal: append: special record with entry id %d is never written", rec.EntryID())
	}
	return nil
}

// startFile creates the next journal file and buffers its header.
func (j *Journal) startFile() error {
	// Open chose an id above every file's, so a file of this name can only
	// come from another process writing here.
	a, err := durablelog.Create(j.fsys, j.dir, FileName(j.nextLogID), "journal")
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w (is another bookie using this directory?)", err)
	}
	if err != nil {
		return err
	}
	j.cur, j.curID = a, j.nextLogID
	j.nextLogID++
	a.Append(header(int32(j.cfg.FormatVersion)))
	return nil
}

// writeOut writes the buffered bytes to the file, without syncing, after
// growing the file ahead of them.
func (j *Journal) writeOut() error {
	c := j.cur
	if c == nil || c.Buffered() == 0 {
		return nil
	}
	if err := j.preallocate(c.Offset()); err != nil {
		return j.poison(err)
	}
	if err := c.Flush(); err != nil {
		return j.poison(err)
	}
	return nil
}

// preallocate grows the file in PreAllocSizeBytes steps until it reaches
// end, as BookKeeper's JournalChannel does: by writing one alignment unit
// of zeros just below the new size. The zeros land beyond every byte
// written so far, so they never overwrite data.
func (j *Journal) preallocate(end int64) error {
	size := j.cur.Size()
	if end <= size {
		return nil
	}
	for size < end {
		size += j.cfg.PreAllocSizeBytes
	}
	return j.cur.Preallocate(size, j.cfg.AlignmentBytes)
}

// Flush closes the current batch: it pads the file to the alignment
// boundary with a padding record and writes everything buffered to the
// file, without syncing. With nothing appended since the last Flush it
// does nothing.
func (j *Journal) Flush() error {
	if err := j.usable(); err != nil {
		return err
	}
	if j.unflushedRecords == 0 {
		return nil
	}
	n := paddingBytes(j.cur.Offset(), j.cfg.AlignmentBytes)
	var h [paddingHeaderBytes]byte
	j.cur.Append(appendPaddingHeader(h[:0], n), paddingZeros[:n-paddingHeaderBytes])
	if err := j.writeOut(); err != nil {
		return err
	}
	j.unflushedBytes, j.unflushedRecords = 0, 0
	return nil
}

// Sync flushes the current batch and makes every record appended so far
// durable: fdatasync (fsync when the file's size changed since its last
// sync, which preallocation makes rare), then, the first time for each
// file, fsync of the directory. Mark then moves past every appended
// record, and an add may be acknowledged. If the file's data has passed
// MaxSizeBytes, Sync then closes it; the next Append starts a new file.
// Syncing before a roll keeps a rule the reader relies on: every file but
// the last is complete.
func (j *Journal) Sync() error {
	if err := j.Flush(); err != nil {
		return err
	}
	c := j.cur
	if c == nil || !c.Dirty() {
		return nil
	}
	if err := c.Sync(); err != nil {
		return j.poison(err)
	}
	j.mark = Position{LogID: j.curID, Offset: c.Flushed()}
	if c.Flushed() > j.cfg.MaxSizeBytes {
		return j.closeFile()
	}
	return nil
}

// closeFile closes the current file after a roll; the next Append starts
// a new one.
func (j *Journal) closeFile() error {
	c := j.cur
	j.cur = nil
	if err := c.Close(); err != nil {
		return j.poison(err)
	}
	return nil
}

// ShouldFlush reports whether the batch of records appended since the last
// Flush must close now, by BookKeeper's group-commit rules: its oldest
// record has waited at least MaxGroupWait (oldestAge, measured by the
// driver's clock); more than BufferedWritesThresholdBytes or (if set)
// BufferedEntriesThreshold records are buffered; or the driver's queue is
// empty, unless WaitWhenQueueEmpty is set. With no such records it is
// false.
//
// BookKeeper closes on an age strictly above the wait; keeper closes at
// the wait itself, so that a driver on a virtual clock, woken exactly at
// the deadline, makes progress.
func (j *Journal) ShouldFlush(oldestAge time.Duration, queueEmpty bool) bool {
	return j.FlushCause(oldestAge, queueEmpty) != NoFlush
}

// FlushCause is which of ShouldFlush's rules closes a batch, as
// BookKeeper's journal counts them (JOURNAL_NUM_FLUSH_*).
type FlushCause int

const (
	NoFlush          FlushCause = iota // the batch stays open
	FlushMaxWait                       // the oldest record waited MaxGroupWait
	FlushOutstanding                   // past BufferedWritesThresholdBytes or BufferedEntriesThreshold
	FlushQueueEmpty                    // the driver's queue is empty
)

// FlushCause returns the rule that closes the batch now, the first that
// holds in ShouldFlush's order, or NoFlush.
func (j *Journal) FlushCause(oldestAge time.Duration, queueEmpty bool) FlushCause {
	c := j.cfg
	switch {
	case j.unflushedRecords == 0:
		return NoFlush
	case oldestAge >= c.MaxGroupWait:
		return FlushMaxWait
	case j.unflushedBytes > c.BufferedWritesThresholdBytes:
		return FlushOutstanding
	case c.BufferedEntriesThreshold > 0 && j.unflushedRecords > c.BufferedEntriesThreshold:
		return FlushOutstanding
	case queueEmpty && !c.WaitWhenQueueEmpty:
		return FlushQueueEmpty
	}
	return NoFlush
}

// FlushWait returns how much longer the batch may wait for more records
// before its age closes it, given the age of its oldest record: what a
// driver sets its timer to while its queue is empty (which, unless
// WaitWhenQueueEmpty is set, closes the batch at once). It is 0 when the
// batch is due (or there is none).
func (j *Journal) FlushWait(oldestAge time.Duration) time.Duration {
	if j.unflushedRecords == 0 {
		return 0
	}
	return max(0, j.cfg.MaxGroupWait-oldestAge)
}

// Close syncs what was appended and closes the current file. On a poisoned
// journal it only closes, and returns the poison. Later calls return
// ErrClosed.
func (j *Journal) Close() error {
	if j.closed {
		return ErrClosed
	}
	err := j.Sync()
	if j.cur != nil {
		if closeErr := j.cur.Close(); err == nil {
			err = closeErr
		}
		j.cur = nil
	}
	j.closed = true
	return err
}
