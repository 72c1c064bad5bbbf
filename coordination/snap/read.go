package snap

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"keeper/coordination/datatree"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// readBufferBytes is the read buffer (and checksum granularity) in front of
// the file or decompressor.
const readBufferBytes = 256 << 10

// maxTrailerBytes is the longest trailer after seal 1 that any ZooKeeper
// version writes: the digest record and seal 2, then the last processed
// zxid and seal 3.
const maxTrailerBytes = digestBytes + sealBytes + lpzBytes + sealBytes

// Snapshot is a snapshot file's contents.
type Snapshot struct {
	// Name is the file's name, without the directory.
	Name string
	// Zxid is the snapshot's zxid, from its file name: the last zxid
	// applied when the snapshot started. Recovery replays the log from
	// Zxid+1; because Java's snapshots are fuzzy, the tree may already
	// hold effects of some later txns, which replay must tolerate (docs/zookeeper-protocol.md
	// §9.4). zxid.None if the file name does not carry a zxid.
	Zxid zxid.ID
	// Sessions is the session list in file order, with creation timeouts.
	Sessions []SessionEntry
	// Tree is the data tree, with LastZxid set to Zxid (when known).
	Tree *datatree.Tree
	// Digest is the digest record, or nil if the file has none.
	Digest *Digest
	// DigestChecked reports whether Read found the digest record equal to
	// the tree's digest: it can only when Digest.Zxid is Zxid and the
	// digest version is known. Even then a mismatch proves nothing: a fuzzy
	// snapshot may hold the effects of txns after the record's zxid (Apache
	// ZooKeeper 3.8 writes such files, and a zero record in snapshot.0), and
	// ZooKeeper never checks this case, so Read does not reject it. When
	// Digest.Zxid is newer, only the caller can check it, after replaying
	// the log through Digest.Zxid; an older record is meaningless.
	DigestChecked bool
	// LastProcessedZxid is the value in ZooKeeper 3.9's trailer, or
	// zxid.None if the file has none. It is informational: recovery still
	// resumes from Zxid, which never skips a txn.
	LastProcessedZxid zxid.ID
}

// Read reads and verifies the snapshot at path: the header's magic and
// version, seal 1, and seals 2 and 3 when present. A ".gz" file is
// decompressed first; a ".snappy" one gives ErrUnsupported. The zxid comes
// from the file name; a file not named like a snapshot is read with Zxid
// zxid.None, so its digest cannot be checked. maxLen bounds
// every buffer, string and vector in the file (maxLen <= 0 means
// jute.DefaultMaxBuffer, ZooKeeper's default jute.maxbuffer); nothing is
// allocated ahead of the bytes that back it.
//
// Errors wrap ErrCorrupt when the file is not a complete snapshot and
// ErrUnsupported for a format keeper does not read; errors from the
// filesystem are returned wrapped, without either sentinel. If every seal
// matches but the digest record does not match the tree, Read returns the
// snapshot together with an error wrapping ErrDigestMismatch, and the
// caller decides.
func Read(fs vfs.FS, path string, maxLen int) (*Snapshot, error) {
	name := filepath.Base(path)
	z, c, ok := ParseName(name)
	if !ok {
		z, c = zxid.None, compressionOf(name)
	}
	if c == CompressionSnappy {
		return nil, fmt.Errorf("%w: %s: snappy compression", ErrUnsupported, path)
	}
	f, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("snap: open %s: %w", path, err)
	}
	defer f.Close()
	var src io.Reader = &fileReader{f: f}
	var size int64 // of the uncompressed bytes, when known: the tree sizes its tables by it
	if fi, err := f.Stat(); err == nil && c == CompressionNone {
		size = fi.Size()
	}
	if c == CompressionGzip {
		zr, err := gzip.NewReader(bufio.NewReaderSize(src, readBufferBytes))
		if err != nil {
			return nil, classify(err, path, 0)
		}
		src = zr
	}
	s, err := decode(src, path, z, maxLen, readBufferBytes, size)
	if s != nil {
		s.Name = name
	}
	return s, err
}

// compressionOf guesses the compression of a file whose name is not a
// snapshot name from its suffix.
func compressionOf(name string) Compression {
	switch {
	case strings.HasSuffix(name, ".gz"):
		return CompressionGzip
	case strings.HasSuffix(name, ".snappy"):
		return CompressionSnappy
	}
	return CompressionNone
}

// fileError marks an error from the file itself, so that it is not taken
// for corruption when it reaches us through the decompressor or the tree
// reader.
type fileError struct{ err error }

func (e *fileError) Error() string { return e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// fileReader marks the file's read errors as fileErrors.
type fileReader struct{ f vfs.File }

func (r *fileReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if err != nil && err != io.EOF {
		err = &fileError{err}
	}
	return n, err
}

// classify turns an error met while decoding into Read's error: a file
// error stays one, anything else (a short read, a bad length, a gzip or
// tree error) means the bytes are not a snapshot.
func classify(err error, path string, off int64) error {
	if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupported) {
		return err
	}
	var fe *fileError
	if errors.As(err, &fe) {
		return fmt.Errorf("snap: read %s at offset %d: %w", path, off, fe.err)
	}
	return fmt.Errorf("%w: %s at offset %d: %w", ErrCorrupt, path, off, err)
}

// decode reads the uncompressed bytes of a snapshot whose zxid is z (None
// if unknown) from r through a buffer of bufBytes; path is for messages
// only, size the number of bytes if known (else 0).
func decode(r io.Reader, path string, z zxid.ID, maxLen, bufBytes int, size int64) (*Snapshot, error) {
	sr := newSumReader(r, bufBytes)
	defer sr.release()
	s := &Snapshot{Zxid: z, LastProcessedZxid: zxid.None}
	if err := readHeader(sr, path); err != nil {
		return nil, classify(err, path, sr.offset())
	}
	var err error
	if s.Sessions, err = readSessions(sr, path); err != nil {
		return nil, classify(err, path, sr.offset())
	}
	if s.Tree, err = datatree.ReadBodySized(sr, maxLen, size); err != nil {
		return nil, classify(err, path, sr.offset())
	}
	if z >= 0 {
		s.Tree.SetLastZxid(z)
	}
	if err := readSeal1(sr, path); err != nil {
		return nil, classify(err, path, sr.offset())
	}
	afterSeal1, trailerOff := sr.sum(), sr.offset()
	trailer, err := io.ReadAll(io.LimitReader(sr, maxTrailerBytes+1))
	if err != nil {
		return nil, classify(err, path, sr.offset())
	}
	if s.Digest, s.LastProcessedZxid, err = parseTrailer(trailer, afterSeal1, path, trailerOff); err != nil {
		return nil, err
	}
	return s, s.checkDigest(path)
}

func readHeader(sr *sumReader, path string) error {
	var b [headerBytes]byte
	if _, err := io.ReadFull(sr, b[:]); err != nil {
		return err
	}
	if magic := int32(binary.BigEndian.Uint32(b[0:])); magic != Magic {
		return corruptf("%s: magic %#08x, want %#08x (ZKSN)", path, uint32(magic), Magic)
	}
	if v := int32(binary.BigEndian.Uint32(b[4:])); v != Version {
		return fmt.Errorf("%w: %s: format version %d, want %d", ErrUnsupported, path, v, Version)
	}
	return nil // the dbid is ignored, as Java does
}

// readSessions reads the session list. The count is checked against the
// bytes that follow, not trusted for an allocation.
func readSessions(sr *sumReader, path string) ([]SessionEntry, error) {
	var b [sessionBytes]byte
	if _, err := io.ReadFull(sr, b[:4]); err != nil {
		return nil, err
	}
	count := int32(binary.BigEndian.Uint32(b[:4]))
	if count < 0 {
		return nil, corruptf("%s: session count %d", path, count)
	}
	out := make([]SessionEntry, 0, min(int(count), 4096))
	seen := make(map[int64]struct{}, min(int(count), 4096))
	for range count {
		if _, err := io.ReadFull(sr, b[:]); err != nil {
			return nil, err
		}
		e := SessionEntry{ID: int64(binary.BigEndian.Uint64(b[0:])), TimeoutMs: int32(binary.BigEndian.Uint32(b[8:]))}
		if _, dup := seen[e.ID]; dup {
			return nil, corruptf("%s: session %#x listed twice", path, e.ID)
		}
		seen[e.ID] = struct{}{}
		out = append(out, e)
	}
	return out, nil
}

// readSeal1 reads the seal after the tree and checks it against the
// checksum of every byte before it.
func readSeal1(sr *sumReader, path string) error {
	want := sr.sum()
	var b [sealBytes]byte
	if _, err := io.ReadFull(sr, b[:]); err != nil {
		return err
	}
	return checkSeal(b[:], want, path, "seal 1")
}

// checkSeal checks a 13-byte seal: the Adler-32 want as a long, then "/".
func checkSeal(b []byte, want uint32, path, which string) error {
	if got := binary.BigEndian.Uint64(b); got != uint64(want) {
		return corruptf("%s: %s is %#x, the data's Adler-32 is %#x", path, which, got, want)
	}
	if !bytes.Equal(b[8:], sealMarker[:]) {
		return corruptf("%s: %s does not end with \"/\"", path, which)
	}
	return nil
}

// parseTrailer parses what follows seal 1. Its length tells its layout,
// since every ZooKeeper version writes whole records:
//
//	 0  nothing (digests disabled, or before 3.6)
//	33  digest record, seal 2                       (3.6 - 3.8)
//	54  digest record, seal 2, lastProcessedZxid, seal 3 (3.9)
//	21  lastProcessedZxid, seal 3                  (3.9, digests disabled)
//
// sum is the Adler-32 of every byte up to and including seal 1.
func parseTrailer(t []byte, sum uint32, path string, off int64) (*Digest, zxid.ID, error) {
	lpz := zxid.None
	var d *Digest
	switch len(t) {
	case 0, lpzBytes + sealBytes, digestBytes + sealBytes, maxTrailerBytes:
	default:
		return nil, lpz, corruptf("%s: %d bytes after seal 1 at offset %d; a trailer is 0, 21, 33 or 54 bytes",
			path, len(t), off)
	}
	if len(t) >= digestBytes+sealBytes {
		sum = adlerUpdate(sum, t[:digestBytes])
		if err := checkSeal(t[digestBytes:digestBytes+sealBytes], sum, path, "seal 2"); err != nil {
			return nil, lpz, err
		}
		sum = adlerUpdate(sum, t[digestBytes:digestBytes+sealBytes])
		d = &Digest{
			Zxid:       zxid.ID(binary.BigEndian.Uint64(t[0:])),
			Version:    int32(binary.BigEndian.Uint32(t[8:])),
			TreeDigest: int64(binary.BigEndian.Uint64(t[12:])),
		}
		t = t[digestBytes+sealBytes:]
	}
	if len(t) == lpzBytes+sealBytes {
		sum = adlerUpdate(sum, t[:lpzBytes])
		if err := checkSeal(t[lpzBytes:], sum, path, "seal 3"); err != nil {
			return nil, lpz, err
		}
		lpz = zxid.ID(binary.BigEndian.Uint64(t))
	}
	return d, lpz, nil
}

// checkDigest notes whether the digest record matches the tree when it
// names the snapshot's own zxid (see Snapshot.DigestChecked). A mismatch
// there is not an error: the file may be fuzzy.
func (s *Snapshot) checkDigest(path string) error {
	d := s.Digest
	if d == nil || s.Zxid < 0 || d.Zxid != s.Zxid || d.Version != datatree.DigestVersion {
		return nil
	}
	s.DigestChecked = s.Tree.Digest() == d.TreeDigest
	return nil
}
