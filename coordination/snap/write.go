package snap

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"fmt"
	"hash/adler32"
	"io"
	"path/filepath"
	"slices"

	"keeper/coordination/datatree"
	"keeper/coordination/jute"
	"keeper/coordination/zxid"
	"keeper/internal/failpoint"
	"keeper/internal/invariants"
	"keeper/internal/vfs"
)

// writeBufferBytes is the write buffer in front of the file (and of the
// compressor): big enough that a snapshot costs few system calls, small
// next to the tree it holds.
const writeBufferBytes = 256 << 10

// flushBytes is how much of the header and session list is encoded before
// it is handed to the buffered writer.
const flushBytes = 32 << 10

// Options selects the optional parts of the file Write produces. The zero
// value writes what Apache ZooKeeper 3.8 writes with its defaults.
type Options struct {
	// Compression is CompressionNone (the default, as in Java) or
	// CompressionGzip. CompressionSnappy is refused.
	Compression Compression

	// LastProcessedZxid adds ZooKeeper 3.9's trailer after the digest
	// record: the snapshot's zxid and a third seal. It is off by default:
	// 3.8 does not write it, 3.9 falls back to the file name without it,
	// and 3.8 only tolerates it after a digest record (it reads the digest
	// record and then stops; without one it would parse the trailer as a
	// digest record and fail the next seal), so Write refuses it when
	// digest is nil.
	LastProcessedZxid bool
}

// Validate reports whether Write can honour o on its own; Write also
// refuses LastProcessedZxid without a digest record.
func (o Options) Validate() error {
	if o.Compression != CompressionNone && o.Compression != CompressionGzip {
		return fmt.Errorf("%w: cannot write %s compression", ErrUnsupported, o.Compression)
	}
	return nil
}

// Write writes a snapshot of tree and sessions into dir as
// snapshot.<hex z> (docs/zookeeper-protocol.md §9.4) and returns the file's name.
//
// z is the last zxid applied to the tree when the snapshot started: the
// file's name, and where recovery resumes replaying the log (z+1). The
// caller must give Write a tree that does not change while it runs (a
// paused or copy-on-write view); Write only serialises it. digest, if not
// nil, is written as the digest record and a second seal: the tree digest
// after the txn digest.Zxid, normally z and tree.Digest(). If digest.Zxid
// is z, Write checks it against the tree first and refuses a mismatch.
// sessions are written sorted by id with the timeouts they were created
// with; ids must be distinct.
//
// The file is created atomically: written to a temporary file in dir,
// synced, renamed over any file of the same name, and the directory synced.
// After an error no file named snapshot.* has been created, except when the
// final directory sync fails: then the new file exists but may not survive
// a crash. After a failed sync, of the file or the directory, the disk's
// state is unknown, and the caller must stop using the directory rather
// than retry (docs/storage-recovery.md, "The durable-log rules"). A temporary file that a crash leaves behind is
// removed by RemoveTemp.
func Write(fs vfs.FS, dir string, z zxid.ID, sessions []SessionEntry, tree *datatree.Tree,
	digest *Digest, opts Options) (string, error) {
	if err := checkWrite(z, sessions, tree, digest, opts); err != nil {
		return "", err
	}
	return write(fs, dir, z, sessions, tree, digest, opts)
}

// Body writes a snapshot body: the ACL cache, the nodes and the end marker,
// the part between the session list and the first seal. *datatree.Tree is
// one; a fuzzy body staged while the tree kept changing is another.
type Body interface {
	WriteBody(w io.Writer) error
}

// LateDigest is a Body whose digest record is known only once its nodes
// are written, such as a fuzzy snapshot streamed while the walk runs: when
// WriteFrom is given no digest, it writes the one Digest returns after
// WriteBody (none if nil).
type LateDigest interface {
	Body
	Digest() *Digest
}

// WriteFrom is Write for a body that is not a still tree, such as a fuzzy
// snapshot (datatree.FuzzyBody) staged by the caller. It cannot check the
// digest against the body: the digest record must name the zxid whose tree
// digest it holds, which for a fuzzy snapshot is the last txn applied when
// the walk ended, and a reader checks it after replaying the log that far.
func WriteFrom(fs vfs.FS, dir string, z zxid.ID, sessions []SessionEntry, body Body,
	digest *Digest, opts Options) (string, error) {
	if err := opts.Validate(); err != nil {
		return "", err
	}
	switch {
	case body == nil:
		return "", fmt.Errorf("snap: write snapshot %s: no body", z)
	case z < 0:
		return "", fmt.Errorf("snap: write snapshot: negative zxid %d", int64(z))
	case opts.LastProcessedZxid && digest == nil:
		if _, late := body.(LateDigest); !late {
			return "", fmt.Errorf("snap: write snapshot %s: the lastProcessedZxid trailer needs a digest record", z)
		}
	}
	return write(fs, dir, z, sessions, body, digest, opts)
}

func write(fs vfs.FS, dir string, z zxid.ID, sessions []SessionEntry, body Body,
	digest *Digest, opts Options) (string, error) {
	sorted := slices.SortedFunc(slices.Values(sessions), func(a, b SessionEntry) int { return cmp.Compare(a.ID, b.ID) })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].ID == sorted[i-1].ID {
			return "", fmt.Errorf("snap: write snapshot %s: session %#x listed twice", z, sorted[i].ID)
		}
	}
	name := Name(z, opts.Compression)
	tmp := filepath.Join(dir, tempName(name))
	f, err := fs.Create(tmp)
	if err != nil {
		return "", fmt.Errorf("snap: create %s: %w", tmp, err)
	}
	var lpz *zxid.ID
	if opts.LastProcessedZxid {
		lpz = &z
	}
	if err := writeFile(f, opts.Compression, sorted, body, digest, lpz); err != nil {
		_ = f.Close()
		_ = fs.Remove(tmp) // best effort; RemoveTemp finds it otherwise
		return "", fmt.Errorf("snap: write %s: %w", tmp, err)
	}
	failpoint.Hit(failpoint.SnapBeforeRename)
	if err := fs.Rename(tmp, filepath.Join(dir, name)); err != nil {
		_ = fs.Remove(tmp)
		return "", fmt.Errorf("snap: rename %s to %s: %w", tmp, name, err)
	}
	failpoint.Hit(failpoint.SnapRenamedBeforeDirSync)
	if err := fs.SyncDir(dir); err != nil {
		return "", fmt.Errorf("snap: sync directory %s after writing %s: %w", dir, name, err)
	}
	return name, nil
}

// checkWrite validates Write's arguments before anything touches the disk.
func checkWrite(z zxid.ID, sessions []SessionEntry, tree *datatree.Tree, digest *Digest, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	switch {
	case tree == nil:
		return fmt.Errorf("snap: write snapshot %s: no tree", z)
	case z < 0:
		return fmt.Errorf("snap: write snapshot: negative zxid %d", int64(z))
	case opts.LastProcessedZxid && digest == nil:
		return fmt.Errorf("snap: write snapshot %s: the lastProcessedZxid trailer needs a digest record, "+
			"or ZooKeeper 3.8 cannot read the file", z)
	case len(sessions) > 1<<31-1:
		return fmt.Errorf("snap: write snapshot %s: %d sessions", z, len(sessions))
	}
	if invariants.Enabled {
		invariants.Assertf(tree.ComputeDigest() == tree.Digest(), "snap: tree digest %d, recomputed %d",
			tree.Digest(), tree.ComputeDigest())
	}
	if digest != nil && digest.Zxid == z && digest.Version == datatree.DigestVersion && digest.TreeDigest != tree.Digest() {
		return fmt.Errorf("%w: refusing to write snapshot %s: digest record says %d, the tree's digest is %d",
			ErrDigestMismatch, z, digest.TreeDigest, tree.Digest())
	}
	return nil
}

// writeFile writes the whole file to f through a buffer (and a compressor),
// syncs and closes it.
func writeFile(f vfs.File, c Compression, sessions []SessionEntry, body Body, digest *Digest, lpz *zxid.ID) error {
	fileBuf := getWriter(f)
	defer putWriter(fileBuf)
	var zw *gzip.Writer
	var dst io.Writer = fileBuf
	if c == CompressionGzip {
		zw = gzip.NewWriter(fileBuf)
		zbuf := getWriter(zw)
		defer putWriter(zbuf)
		dst = zbuf
	}
	if err := encode(dst, sessions, body, digest, lpz); err != nil {
		return err
	}
	if zw != nil {
		if err := dst.(*bufio.Writer).Flush(); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
	}
	if err := fileBuf.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return f.Close()
}

// encoder writes jute values to a sumWriter in chunks, with a sticky error.
type encoder struct {
	sw  *sumWriter
	e   jute.Encoder
	err error
}

func (enc *encoder) flush() {
	if enc.err == nil && len(enc.e.B) > 0 {
		_, enc.err = enc.sw.Write(enc.e.B)
	}
	enc.e.B = enc.e.B[:0]
}

// seal writes the Adler-32 of everything written so far, as a long, and
// the ustring "/".
func (enc *encoder) seal() {
	enc.flush()
	enc.e.Long(int64(enc.sw.h.Sum32()))
	enc.e.B = append(enc.e.B, sealMarker[:]...)
	enc.flush()
}

// encode writes the uncompressed snapshot bytes (the diagram in doc.go) to
// w. w should be buffered; the tree is streamed in chunks of about 32 KiB.
// sessions are written in the order given.
func encode(w io.Writer, sessions []SessionEntry, body Body, digest *Digest, lpz *zxid.ID) error {
	enc := &encoder{sw: &sumWriter{w: w, h: adler32.New()}}
	// The header and the session list, up to flushBytes at a time: a small
	// snapshot gets a small buffer.
	enc.e.B = make([]byte, 0, min(flushBytes, headerBytes+4+sessionBytes*len(sessions))+64)
	enc.e.Int(Magic)
	enc.e.Int(Version)
	enc.e.Long(dbID)
	enc.e.Int(int32(len(sessions)))
	for _, s := range sessions {
		enc.e.Long(s.ID)
		enc.e.Int(s.TimeoutMs)
		if len(enc.e.B) >= flushBytes {
			enc.flush()
		}
	}
	enc.flush()
	if enc.err != nil {
		return enc.err
	}
	if err := body.WriteBody(enc.sw); err != nil {
		return err
	}
	if ld, ok := body.(LateDigest); ok && digest == nil {
		digest = ld.Digest()
		if lpz != nil && digest == nil {
			return fmt.Errorf("the lastProcessedZxid trailer needs a digest record, and the body gave none")
		}
	}
	enc.seal()
	if digest != nil {
		enc.e.Long(int64(digest.Zxid))
		enc.e.Int(digest.Version)
		enc.e.Long(digest.TreeDigest)
		enc.seal()
	}
	if lpz != nil {
		enc.e.Long(int64(*lpz))
		enc.seal()
	}
	return enc.err
}
