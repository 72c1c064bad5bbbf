package journal_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"testing"

	"keeper/internal/vfs"
	"keeper/ledgerstore/bookie/journal"
)

// testConfig keeps files small on MemFS: small preallocation steps, files
// that roll every few KiB, and a write buffer that spills mid-batch.
var testConfig = journal.Config{
	FirstLogID:        0x100,
	PreAllocSizeBytes: 4096,
	MaxSizeBytes:      16 << 10,
	MaxRecordBytes:    1 << 16,
	WriteBufferBytes:  2048,
}

// withFormat returns testConfig writing the given format version.
func withFormat(version int) journal.Config {
	cfg := testConfig
	cfg.FormatVersion = version
	return cfg
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entryBody builds an entry's stored form by hand (docs/bookkeeper-protocol.md §6.4): ledgerId,
// entryId, LAC, length, a 4-byte digest and a payload derived from the
// ids, so that every entry's bytes differ.
func entryBody(ledgerID, entryID int64, payloadBytes int) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(ledgerID))
	b = binary.BigEndian.AppendUint64(b, uint64(entryID))
	b = binary.BigEndian.AppendUint64(b, uint64(entryID-1))
	b = binary.BigEndian.AppendUint64(b, uint64(payloadBytes*int(entryID+1)))
	b = binary.BigEndian.AppendUint32(b, 0xD1D1D1D1)
	for i := range payloadBytes {
		b = append(b, byte(int64(i)*7+ledgerID*13+entryID))
	}
	return b
}

func entryRec(t testing.TB, ledgerID, entryID int64, payloadBytes int) journal.Record {
	t.Helper()
	r, err := journal.NewEntryRecord(entryBody(ledgerID, entryID, payloadBytes))
	mustOK(t, err)
	return r
}

// summedRec is entryRec built with NewEntryRecordSummed and the body's
// CRC-32C, as the bookie builds it from the entry store's checksum.
func summedRec(t testing.TB, ledgerID, entryID int64, payloadBytes int) journal.Record {
	t.Helper()
	body := entryBody(ledgerID, entryID, payloadBytes)
	r, err := journal.NewEntryRecordSummed(body, crc32.Checksum(body, castagnoli))
	mustOK(t, err)
	return r
}

// frame6 and frame7 frame a body by hand from the layout, independently
// of the package's writer.
func frame6(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func frame7(body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(body, castagnoli))
	return append(b, body...)
}

func frame(version int, body []byte) []byte {
	if version == 7 {
		return frame7(body)
	}
	return frame6(body)
}

// padding is a padding record of n bytes in all.
func padding(n int) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0xFFFFFF00)
	b = binary.BigEndian.AppendUint32(b, uint32(n-8))
	return append(b, zeros(n-8)...)
}

// fileHeader is a journal file header, built by hand.
func fileHeader(version int) []byte {
	h := append([]byte("BKLG"), 0, 0, 0, byte(version))
	return append(h, zeros(512-8)...)
}

func zeros(n int) []byte { return make([]byte, n) }

func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// padTo returns b extended with a padding record to the next multiple of
// 512 (or the one after, if fewer than 8 bytes remain), as keeper pads.
func padTo(b []byte) []byte {
	n := 512 - len(b)%512
	if n < 8 {
		n += 512
	}
	return append(b, padding(n)...)
}

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeRaw writes a journal file with the given bytes, durably.
func writeRaw(t testing.TB, fsys vfs.FS, journalDir string, logID int64, data []byte) string {
	t.Helper()
	dir := filepath.Join(journalDir, journal.DirName)
	mustOK(t, vfs.MkdirAllSync(fsys, dir, 0o755))
	p := filepath.Join(dir, journal.FileName(logID))
	f, err := fsys.Create(p)
	mustOK(t, err)
	_, err = f.Write(data)
	mustOK(t, err)
	mustOK(t, f.Sync())
	mustOK(t, f.Close())
	mustOK(t, fsys.SyncDir(dir))
	return p
}

// replayed is what Replay returned: copies of the record bodies, the end
// position and the error.
type replayed struct {
	bodies [][]byte
	end    journal.Position
	err    error
}

func replay(fsys vfs.FS, journalDir string, from journal.Position, cfg journal.Config) replayed {
	var r replayed
	r.end, r.err = journal.Replay(fsys, journalDir, from, cfg, func(rec journal.Record) error {
		r.bodies = append(r.bodies, bytes.Clone(rec.Body()))
		return nil
	})
	return r
}

// recordErr returns err as a *RecordError, failing the test if it is not.
func recordErr(t testing.TB, err error) *journal.RecordError {
	t.Helper()
	var re *journal.RecordError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not a *RecordError", err, err)
	}
	return re
}

// describe summarizes bodies for failure messages.
func describe(bodies [][]byte) string {
	var b bytes.Buffer
	for i, body := range bodies {
		r, err := journal.DecodeRecord(body)
		if err != nil {
			fmt.Fprintf(&b, "[%d: %v] ", i, err)
			continue
		}
		fmt.Fprintf(&b, "[%d: %v] ", i, r)
	}
	return b.String()
}
