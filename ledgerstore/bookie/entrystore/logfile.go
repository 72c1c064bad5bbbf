package entrystore

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sync/atomic"

	"keeper/internal/invariants"
	"keeper/internal/vfs"
)

// writeBufferBytes is how much a log writer buffers before it writes: big
// writes are cheap, and a flush syncs whatever is left anyway.
const writeBufferBytes = 1 << 20

// logFile is one entry log.
type logFile struct {
	id   int64
	dir  int // index in Config.Dirs
	path string
	f    vfs.File // read handle; the writer's handle for the current log

	// size is how many bytes of the file reads may look at: the header
	// and every record written out so far.
	size atomic.Int64

	// opMu guards the rest.
	sealed  bool
	known   bool            // ledgers is complete (from the map or a scan)
	damaged bool            // a scan found corruption: never GC or compact it
	ledgers map[int64]int64 // record bytes per ledger
}

// totalBytes is the record bytes the ledgers map accounts for.
func (lf *logFile) totalBytes() int64 {
	var total int64
	for _, b := range lf.ledgers {
		total += b
	}
	return total
}

// logWriter appends records to a directory's current log. opMu guards it.
type logWriter struct {
	dir      int
	lf       *logFile // nil until the first append after Open or a roll
	buf      []byte   // records not written out yet
	written  int64    // file offset where buf starts
	records  int      // records in the current log
	unsynced bool     // written out since the last sync
}

func (w *logWriter) end() int64 { return w.written + int64(len(w.buf)) }

// appendEntry adds entry, whose entrySum is sum, to the current log of
// dir, rolling first if it would grow past EntryLogMaxBytes, and returns
// its location. The record is only buffered: syncWriter makes it durable.
func (s *Store) appendEntry(dir int, ledgerID int64, entry []byte, sum uint32) (uint64, error) {
	w := s.writers[dir]
	need := recordHeaderBytes + int64(len(entry))
	if w.lf != nil && w.records > 0 && w.end()+need > s.cfg.EntryLogMaxBytes {
		if err := s.sealWriter(w); err != nil {
			return 0, err
		}
	}
	if w.lf == nil {
		if err := s.createLog(w); err != nil {
			return 0, err
		}
	}
	off := w.end() + recordHeaderBytes
	invariants.Assertf(off <= math.MaxUint32 && w.lf.id <= maxLogID,
		"entry log %d offset %d does not fit a location", w.lf.id, off)
	w.buf = appendRecordSummed(w.buf, entry, sum)
	w.lf.ledgers[ledgerID] += need
	w.records++
	if len(w.buf) >= writeBufferBytes {
		if err := w.writeOut(); err != nil {
			return 0, err
		}
	}
	return location(w.lf.id, off), nil
}

// writeOut writes the buffered records to the file (no sync).
func (w *logWriter) writeOut() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.lf.f.WriteAt(w.buf, w.written); err != nil {
		return fmt.Errorf("entrystore: write %s at offset %d: %w", w.lf.path, w.written, err)
	}
	w.written += int64(len(w.buf))
	w.lf.size.Store(w.written)
	w.buf = w.buf[:0]
	w.unsynced = true
	return nil
}

// syncWriter writes out and fsyncs the current log of w, if any.
func (s *Store) syncWriter(w *logWriter) error {
	if w.lf == nil {
		return nil
	}
	if err := w.writeOut(); err != nil {
		return err
	}
	if !w.unsynced {
		return nil
	}
	if err := w.lf.f.Sync(); err != nil {
		return fmt.Errorf("entrystore: sync %s: %w", w.lf.path, err)
	}
	w.unsynced = false
	return nil
}

// sealWriter seals w's current log; the next append starts a new one.
func (s *Store) sealWriter(w *logWriter) error {
	if err := w.writeOut(); err != nil {
		return err
	}
	lf := w.lf
	if err := sealLog(lf, w.written); err != nil {
		return err
	}
	w.lf, w.records, w.unsynced = nil, 0, false
	s.cfg.Logger.Debug("sealed entry log", "log", lf.id, "bytes", lf.size.Load())
	return nil
}

// sealLog appends lf's ledgers map at end (where its records stop), syncs,
// then patches the header and syncs again. A crash before the second sync
// leaves a log whose body is intact and whose map is ignored; Open seals
// it again.
func sealLog(lf *logFile, end int64) error {
	pairs := make([]LedgerBytes, 0, len(lf.ledgers))
	for _, id := range slices.Sorted(maps.Keys(lf.ledgers)) {
		pairs = append(pairs, LedgerBytes{LedgerID: id, Bytes: lf.ledgers[id]})
	}
	chunks := appendMapChunks(nil, pairs)
	if _, err := lf.f.WriteAt(chunks, end); err != nil {
		return fmt.Errorf("entrystore: write ledgers map of %s: %w", lf.path, err)
	}
	if err := lf.f.Sync(); err != nil {
		return fmt.Errorf("entrystore: sync %s: %w", lf.path, err)
	}
	h := encodeHeader(Header{Version: LogVersion, LedgersMapOffset: end, LedgersCount: int32(len(pairs))})
	if _, err := lf.f.WriteAt(h[:20], 0); err != nil {
		return fmt.Errorf("entrystore: seal %s: %w", lf.path, err)
	}
	if err := lf.f.Sync(); err != nil {
		return fmt.Errorf("entrystore: sync %s: %w", lf.path, err)
	}
	lf.size.Store(end + int64(len(chunks)))
	lf.sealed, lf.known = true, true
	return nil
}

// createLog starts a new log in w's directory: it records the id in
// lastId first (so an id is never used twice, even if its log is later
// removed), then creates the file with its header, syncs it and the
// directory.
func (s *Store) createLog(w *logWriter) error {
	id := s.nextLogID
	if id > maxLogID {
		return fmt.Errorf("entrystore: entry log ids exhausted (%d)", id)
	}
	cur := s.currentDir(w.dir)
	if err := writeLastID(s.cfg.FS, cur, id); err != nil {
		return err
	}
	s.nextLogID++
	path := filepath.Join(cur, logFileName(id))
	f, err := s.cfg.FS.Create(path)
	if err != nil {
		return fmt.Errorf("entrystore: create %s: %w", path, err)
	}
	lf := &logFile{id: id, dir: w.dir, path: path, f: f, known: true, ledgers: make(map[int64]int64)}
	if _, err := f.WriteAt(freshHeader, 0); err != nil {
		_ = f.Close() // the write error is the one to report
		return fmt.Errorf("entrystore: write header of %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("entrystore: sync %s: %w", path, err)
	}
	if err := s.cfg.FS.SyncDir(cur); err != nil {
		_ = f.Close()
		return fmt.Errorf("entrystore: sync dir %s: %w", cur, err)
	}
	lf.size.Store(LogHeaderBytes)
	s.logsMu.Lock()
	s.logs[id] = lf
	s.logsMu.Unlock()
	w.lf, w.written, w.records, w.unsynced = lf, LogHeaderBytes, 0, false
	s.cfg.Logger.Debug("created entry log", "log", id, "dir", s.cfg.Dirs[w.dir])
	return nil
}

// writeLastID replaces cur/lastId atomically (tmp, sync, rename, sync dir).
func writeLastID(fsys vfs.FS, cur string, id int64) error {
	tmp, final := filepath.Join(cur, lastIDFile+".tmp"), filepath.Join(cur, lastIDFile)
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("entrystore: create %s: %w", tmp, err)
	}
	_, err = f.Write([]byte(fmt.Sprintf("%x\n", id)))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, final)
	}
	if err == nil {
		err = fsys.SyncDir(cur)
	}
	if err != nil {
		return fmt.Errorf("entrystore: write %s: %w", final, err)
	}
	return nil
}

// lastIDFile holds the id of the last log created in a directory.
const lastIDFile = "lastId"

// currentDir is where dir's entry logs live.
func (s *Store) currentDir(dir int) string { return filepath.Join(s.cfg.Dirs[dir], "current") }

// dirOf returns the directory ledger's entries are written to.
func (s *Store) dirOf(ledgerID int64) int { return int(ledgerID % int64(len(s.cfg.Dirs))) }

// sortedLogs returns the logs in id order. Caller holds opMu (the set of
// logs changes only under it).
func (s *Store) sortedLogs() []*logFile {
	s.logsMu.RLock()
	defer s.logsMu.RUnlock()
	out := slices.Collect(maps.Values(s.logs))
	slices.SortFunc(out, func(a, b *logFile) int { return cmp.Compare(a.id, b.id) })
	return out
}

// isCurrent reports whether lf is a writer's current log. Caller holds opMu.
func (s *Store) isCurrent(lf *logFile) bool {
	return s.writers[lf.dir].lf == lf
}
