package chaos

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"keeper/coordination/snap"
	"keeper/coordination/txnlog"
	"keeper/internal/vfs"
)

// Corruption damages a stopped server's files, as a failing disk or a
// careless operator would (jepsen.etcd's bitflip, ClickHouse's
// corruptors). Apply returns what it did.
type Corruption struct {
	Name  string
	Apply func(dataDir string, rng *rand.Rand) (string, error)
}

// ErrNothingToCorrupt means the data directory has no file of the kind.
var ErrNothingToCorrupt = errors.New("chaos: no such file to corrupt")

// Corruptions are scenario 7's offline faults.
var Corruptions = []Corruption{
	{"log-bitflip-tail", func(dir string, rng *rand.Rand) (string, error) {
		return mutateLog(dir, func(f string, b []byte, end int) (string, error) {
			off := max(txnlog.FileHeaderBytes, end-64) + rng.IntN(min(64, end-txnlog.FileHeaderBytes))
			bit := byte(1) << rng.IntN(8)
			return fmt.Sprintf("flipped bit %#x at offset %d of %s (data ends at %d)", bit, off, f, end), flip(f, off, bit)
		})
	}},
	{"log-zero-byte", func(dir string, rng *rand.Rand) (string, error) {
		return mutateLog(dir, func(f string, b []byte, end int) (string, error) {
			var nonzero []int
			for i := txnlog.FileHeaderBytes; i < end; i++ {
				if b[i] != 0 {
					nonzero = append(nonzero, i)
				}
			}
			if len(nonzero) == 0 {
				return "", ErrNothingToCorrupt
			}
			off := nonzero[rng.IntN(len(nonzero))]
			return fmt.Sprintf("zeroed byte %d of %s (data ends at %d)", off, f, end), flip(f, off, b[off])
		})
	}},
	{"log-truncate-tail", func(dir string, rng *rand.Rand) (string, error) {
		return mutateLog(dir, func(f string, b []byte, end int) (string, error) {
			cut := end - 1 - rng.IntN(min(100, end-txnlog.FileHeaderBytes))
			return fmt.Sprintf("truncated %s to %d bytes (data ended at %d)", f, cut, end), os.Truncate(f, int64(cut))
		})
	}},
	{"snapshot-bitflip", func(dir string, rng *rand.Rand) (string, error) {
		return mutateSnapshot(dir, func(f string, size int64) (string, error) {
			off := rng.IntN(int(size))
			bit := byte(1) << rng.IntN(8)
			return fmt.Sprintf("flipped bit %#x at offset %d of %s (%d bytes)", bit, off, f, size), flip(f, off, bit)
		})
	}},
	{"snapshot-truncate", func(dir string, rng *rand.Rand) (string, error) {
		return mutateSnapshot(dir, func(f string, size int64) (string, error) {
			cut := rng.Int64N(size)
			return fmt.Sprintf("truncated %s from %d to %d bytes", f, size, cut), os.Truncate(f, cut)
		})
	}},
	{"wipe-data", func(dir string, _ *rand.Rand) (string, error) {
		return "removed " + filepath.Join(dir, txnlog.DirName), WipeData(dir)
	}},
}

// WipeData removes a server's logs, snapshots and epoch files, keeping
// myid: the server comes back empty.
func WipeData(dataDir string) error {
	return os.RemoveAll(filepath.Join(dataDir, txnlog.DirName))
}

// mutateLog applies fn to the newest log file that holds data; end is
// where its data ends (the preallocated zeros after it do not count).
func mutateLog(dataDir string, fn func(file string, b []byte, end int) (string, error)) (string, error) {
	files, err := txnlog.Files(vfs.Default, dataDir)
	if err != nil {
		return "", err
	}
	for i := len(files) - 1; i >= 0; i-- {
		b, err := os.ReadFile(files[i].Path)
		if err != nil {
			return "", err
		}
		end := len(bytes.TrimRight(b, "\x00"))
		if end > txnlog.FileHeaderBytes+txnlog.RecordOverheadBytes {
			return fn(files[i].Path, b, end)
		}
	}
	return "", ErrNothingToCorrupt
}

// mutateSnapshot applies fn to the newest snapshot file.
func mutateSnapshot(dataDir string, fn func(file string, size int64) (string, error)) (string, error) {
	dir := filepath.Join(dataDir, txnlog.DirName)
	infos, err := snap.List(vfs.Default, dir)
	if err != nil {
		return "", err
	}
	if len(infos) == 0 || infos[0].Size == 0 {
		return "", ErrNothingToCorrupt
	}
	return fn(filepath.Join(dir, infos[0].Name), infos[0].Size)
}

// flip XORs the byte at off with mask.
func flip(path string, off int, mask byte) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	b := []byte{0}
	if _, err := f.ReadAt(b, int64(off)); err != nil {
		f.Close()
		return err
	}
	b[0] ^= mask
	if _, err := f.WriteAt(b, int64(off)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
