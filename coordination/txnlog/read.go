package txnlog

import (
	"errors"
	"fmt"
	"io"

	"keeper/coordination/txn"
	"keeper/coordination/zxid"
	"keeper/internal/durablelog"
	"keeper/internal/vfs"
)

// fileReader reads the records of one log file: the scanner's framing
// checks plus the zxid checks that need the payload's header.
type fileReader struct {
	file  File
	f     vfs.File
	sc    *durablelog.Scanner
	first bool     // no record read yet
	rep   *repeats // the records read before, to pass over repeats
}

func openFileReader(fsys vfs.FS, file File, last bool, maxRecordBytes int, rep *repeats) (*fileReader, error) {
	f, err := fsys.Open(file.Path)
	if err != nil {
		return nil, fmt.Errorf("txnlog: open %s: %w", file.Path, err)
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close() // read-only: nothing to lose
		return nil, fmt.Errorf("txnlog: stat %s: %w", file.Path, err)
	}
	sc := newScanner(f, file.Path, info.Size(), last, maxRecordBytes)
	if err := sc.ReadHeader(); err != nil {
		_ = f.Close()
		return nil, err
	}
	return &fileReader{file: file, f: f, sc: sc, first: true, rep: rep}, nil
}

// next returns the next record's payload (valid until the next call) and
// zxid, which must follow prev; io.EOF at the clean end of the file. A
// record that repeats an earlier one byte for byte is passed over
// (repeats).
func (r *fileReader) next(prev zxid.ID) ([]byte, zxid.ID, error) {
	for {
		payload, err := r.sc.Next()
		if err != nil {
			return nil, 0, err
		}
		off := r.sc.RecordOffset()
		if len(payload) < txn.HeaderSize {
			return nil, 0, r.sc.Fail(ErrCorrupt, off, "payload of %d bytes is shorter than a txn header", len(payload))
		}
		z := payloadZxid(payload)
		if r.first && z != r.file.Start {
			return nil, 0, r.sc.Fail(ErrCorrupt, off, "first txn has zxid %v but the file is named for %v", z, r.file.Start)
		}
		r.first = false
		if z <= prev {
			if r.rep.repeat(z, payload) {
				continue
			}
			return nil, 0, r.sc.Fail(ErrCorrupt, off, "zxid %v does not follow %v", z, prev)
		}
		r.rep.add(z, payload)
		return payload, z, nil
	}
}

func (r *fileReader) close() { _ = r.f.Close() } // read-only: nothing to lose

// Iterator reads txns from the log in zxid order. It is not safe for
// concurrent use. A Log appending to the same directory at the same time
// may make the iterator see a torn tail at the end of the last file.
type Iterator struct {
	fsys           vfs.FS
	files          []File // still to open, in order
	lastPath       string // the log's last file, where a torn tail is ErrTorn
	from           zxid.ID
	maxRecordBytes int

	cur     *fileReader
	rep     *repeats
	prev    zxid.ID // the last zxid read, skipped or not
	payload []byte
	err     error // sticky: io.EOF, a *RecordError, ErrClosed, ...
}

// Read returns an iterator over the txns with zxid ≥ from in the log in
// dataLogDir. Like ZooKeeper it starts at the file with the greatest
// starting zxid ≤ from (or the first file) and reads on through every later
// file. The records it skips (zxid < from) are checked like the others.
func Read(fsys vfs.FS, dataLogDir string, from zxid.ID, cfg Config) (*Iterator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	files, err := Files(fsys, dataLogDir)
	if err != nil {
		return nil, err
	}
	it := &Iterator{fsys: fsys, from: from, maxRecordBytes: cfg.MaxRecordBytes, rep: newRepeats()}
	if len(files) > 0 {
		it.lastPath = files[len(files)-1].Path
		it.files = files[startIndex(files, from):]
	}
	return it, nil
}

// Next returns the next txn. At the clean end of the log it returns io.EOF.
// Damage gives a *RecordError wrapping ErrTorn (a torn tail in the last
// file; see RepairTornTail) or ErrCorrupt (anything else). Those errors,
// and I/O errors, are sticky: every later call returns the same error.
//
// One error is not sticky: an intact record whose type keeper cannot
// decode gives a *RecordError wrapping txn.ErrUnknownType, and the next
// call moves on past it.
func (it *Iterator) Next() (*txn.Txn, error) {
	for {
		payload, z, err := it.nextRecord()
		if err != nil {
			return nil, err
		}
		if z < it.from {
			continue
		}
		it.payload = payload
		t, err := txn.Unmarshal(payload, it.maxRecordBytes)
		if err != nil {
			path, off := it.Position()
			if errors.Is(err, txn.ErrUnknownType) {
				return nil, &RecordError{File: path, Offset: off, Reason: "intact record of an unknown type", Err: err}
			}
			it.err = &RecordError{File: path, Offset: off, Reason: "undecodable payload: " + err.Error(), Err: ErrCorrupt}
			return nil, it.err
		}
		return t, nil
	}
}

// Payload returns the encoded payload of the record Next last read (also
// when it reported an unknown type). The slice is valid only until the next
// call to Next.
func (it *Iterator) Payload() []byte { return it.payload }

// Position returns the file and offset of the record Next last read.
func (it *Iterator) Position() (path string, offset int64) {
	if it.cur == nil {
		return "", 0
	}
	return it.cur.file.Path, it.cur.sc.RecordOffset()
}

// Repeats returns how many records the iterator passed over because they
// repeated an earlier record byte for byte (see repeats).
func (it *Iterator) Repeats() int { return it.rep.skipped }

// Close releases the open file. Later calls to Next return ErrClosed.
func (it *Iterator) Close() error {
	if it.cur != nil {
		it.cur.close()
		it.cur = nil
	}
	it.err = ErrClosed
	return nil
}

// nextRecord returns the next record's payload and zxid, crossing files.
func (it *Iterator) nextRecord() ([]byte, zxid.ID, error) {
	for {
		if it.err != nil {
			return nil, 0, it.err
		}
		if it.cur == nil {
			if len(it.files) == 0 {
				it.err = io.EOF
				continue
			}
			file := it.files[0]
			it.files = it.files[1:]
			r, err := openFileReader(it.fsys, file, file.Path == it.lastPath, it.maxRecordBytes, it.rep)
			if err != nil {
				it.err = err
				continue
			}
			it.cur = r
		}
		payload, z, err := it.cur.next(it.prev)
		if err == io.EOF {
			it.cur.close()
			it.cur = nil
			continue
		}
		if err != nil {
			it.err = err
			continue
		}
		it.prev = z
		return payload, z, nil
	}
}
