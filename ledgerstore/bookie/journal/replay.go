package journal

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"keeper/internal/vfs"
)

// Replay reads every record after from, in order, across the journal
// files under journalDir, and calls fn with each entry, master-key, fence
// and explicit-LAC record. Padding and records of unknown kinds are
// skipped (the latter with a warning), as BookKeeper skips them. The
// record passed to fn is valid only during the call.
//
// from is normally the log mark read back with ReadLastMark; the zero
// Position replays every file. Files before from.LogID are not read. If
// from.LogID is set, its file must exist: the mark promises that file
// holds what storage has not seen yet.
//
// Replay returns the position where the journal's intact data ends, and
// nil at a clean end. A torn tail (see the package doc) stops it with a
// *RecordError wrapping ErrTorn, after every record before it was
// replayed; the returned position is then where the torn record starts,
// which is where Open cuts the file. Damage anywhere else gives a
// *RecordError wrapping ErrCorrupt and the position of the damage. An
// error from fn stops Replay and is returned as it is, with the position
// of the record fn was given.
//
// Open (which repairs a torn tail) may run before or after Replay; when it
// ran first, Replay's end equals Open's Mark. Never run Replay on a
// directory a Journal is appending to: its last record may be half written.
func Replay(fsys vfs.FS, journalDir string, from Position, cfg Config, fn func(Record) error) (Position, error) {
	if err := cfg.Validate(); err != nil {
		return from, err
	}
	cfg = cfg.withDefaults()
	dir := filepath.Join(journalDir, DirName)
	files, err := listFiles(fsys, dir)
	if err != nil {
		return from, err
	}
	start := 0
	for start < len(files) && files[start].LogID < from.LogID {
		start++
	}
	if from.LogID > 0 && (start == len(files) || files[start].LogID != from.LogID) {
		return from, &RecordError{File: filepath.Join(dir, FileName(from.LogID)), Offset: from.Offset,
			Reason: "the journal file the log mark names is missing", Err: ErrCorrupt}
	}
	end := from
	for i, file := range files[start:] {
		offset := int64(0)
		if file.LogID == from.LogID {
			offset = from.Offset
		}
		last := start+i == len(files)-1
		stop, err := scanFile(fsys, file, offset, last, cfg.MaxRecordBytes, func(body []byte) error {
			rec := Record{body: body} // the scanner checked it decodes
			if rec.Kind() == KindUnknown {
				cfg.Logger.Warn("skipping journal record of unknown kind",
					"file", file.Path, "ledger", rec.LedgerID(), "entry", rec.EntryID())
				return nil
			}
			return fn(rec)
		})
		// A torn header leaves nothing to keep of this file: Open removes it.
		if err == nil || stop >= HeaderBytes {
			end = Position{LogID: file.LogID, Offset: stop}
		}
		if err != nil {
			return end, err
		}
	}
	return end, nil
}

// scanFile reads the records of file from offset start (0 means just after
// the header) and passes fn each record's body, valid during the call. It
// returns where reading stopped: the clean end of the data, or the start
// of the damage or of the record fn failed on.
func scanFile(fsys vfs.FS, file File, start int64, last bool, maxRecordBytes int,
	fn func(body []byte) error) (int64, error) {
	f, err := fsys.Open(file.Path)
	if err != nil {
		return 0, fmt.Errorf("journal: open %s: %w", file.Path, err)
	}
	defer f.Close() // read-only: nothing to lose
	info, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("journal: stat %s: %w", file.Path, err)
	}
	sc := newScanner(f, file.Path, info.Size(), last, maxRecordBytes)
	if err := sc.ReadHeader(); err != nil {
		return 0, err
	}
	if start > sc.Size() {
		return 0, sc.Fail(ErrCorrupt, start, "the log mark is past the end of the file (%d bytes)", sc.Size())
	}
	sc.StartAt(start)
	for {
		body, err := sc.Next()
		if err == io.EOF {
			return sc.Offset(), nil
		}
		if err != nil {
			return sc.RecordOffset(), err
		}
		if err := fn(body); err != nil {
			return sc.RecordOffset(), err
		}
	}
}

// recoverTail cuts a torn tail (see the package doc) off the journal in
// dir and returns where the data of its last file ends, and the files
// left. A file torn inside its header is removed, and the file before it,
// now the last, is checked in turn; otherwise the last file is truncated
// where the torn record starts, durably. Corruption is returned, and
// nothing changes.
func recoverTail(fsys vfs.FS, dir string, cfg Config) (Position, []File, error) {
	files, err := listFiles(fsys, dir)
	if err != nil {
		return Position{}, nil, err
	}
	for len(files) > 0 {
		last := files[len(files)-1]
		end, err := scanFile(fsys, last, 0, true, cfg.MaxRecordBytes, func([]byte) error { return nil })
		if err == nil {
			return Position{LogID: last.LogID, Offset: end}, files, nil
		}
		var torn *RecordError
		if !errors.Is(err, ErrTorn) || !errors.As(err, &torn) {
			return Position{}, nil, err
		}
		cfg.Logger.Warn("cutting torn tail off journal", "file", torn.File, "offset", torn.Offset, "reason", torn.Reason)
		if torn.Offset >= HeaderBytes {
			if err := cutFile(fsys, last.Path, torn.Offset); err != nil {
				return Position{}, nil, err
			}
			return Position{LogID: last.LogID, Offset: torn.Offset}, files, nil
		}
		if err := removeFile(fsys, last); err != nil {
			return Position{}, nil, err
		}
		files = files[:len(files)-1]
	}
	return Position{}, nil, nil
}
