package entrystore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/cockroachdb/pebble/v2"
	pvfs "github.com/cockroachdb/pebble/v2/vfs"
)

// Key prefixes of the pebble index (see the package doc).
const (
	prefixLocation = 'e' // 'e' | ledgerId u64 | entryId u64 -> location u64
	prefixLedger   = 'l' // 'l' | ledgerId u64 -> ledger record
)

// locationKeyBytes is the length of a location key.
const locationKeyBytes = 17

// locationKey returns the index key of an entry.
func locationKey(ledgerID, entryID int64) []byte {
	var k [locationKeyBytes]byte
	putLocationKey(&k, ledgerID, entryID)
	return k[:]
}

// putLocationKey writes the index key of an entry into k, so that a flush
// setting thousands of them reuses one array (a batch copies what it is
// given).
func putLocationKey(k *[locationKeyBytes]byte, ledgerID, entryID int64) {
	k[0] = prefixLocation
	binary.BigEndian.PutUint64(k[1:9], uint64(ledgerID))
	binary.BigEndian.PutUint64(k[9:17], uint64(entryID))
}

// ledgerLocationBounds returns the key range [lower, upper) holding all of
// ledger's locations. Entry ids are non-negative int64s, so 1<<63 as an
// unsigned id is past every one of them.
func ledgerLocationBounds(ledgerID int64) (lower, upper []byte) {
	upper = locationKey(ledgerID, 0)
	binary.BigEndian.PutUint64(upper[9:17], 1<<63)
	return locationKey(ledgerID, 0), upper
}

// decodeLocationKey returns the ids in a location key.
func decodeLocationKey(k []byte) (ledgerID, entryID int64, ok bool) {
	if len(k) != 17 || k[0] != prefixLocation {
		return 0, 0, false
	}
	return int64(binary.BigEndian.Uint64(k[1:9])), int64(binary.BigEndian.Uint64(k[9:17])), true
}

// ledgerKey returns the index key of a ledger record.
func ledgerKey(ledgerID int64) []byte {
	k := make([]byte, 9)
	k[0] = prefixLedger
	binary.BigEndian.PutUint64(k[1:9], uint64(ledgerID))
	return k
}

// encodeLocation and decodeLocation convert an index value.
func encodeLocation(loc uint64) []byte { return binary.BigEndian.AppendUint64(nil, loc) }

func decodeLocation(v []byte) (uint64, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: index value of %d bytes", ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// openIndex opens (creating if needed) the pebble database of cfg.
func openIndex(cfg Config) (*pebble.DB, error) {
	dir := cfg.IndexFS.PathJoin(cfg.IndexDir, "current", "index")
	if err := mkdirAllSync(cfg.IndexFS, dir); err != nil {
		return nil, fmt.Errorf("entrystore: create index dir %s: %w", dir, err)
	}
	logger := pebbleLogger{cfg.Logger}
	db, err := pebble.Open(dir, &pebble.Options{
		FS:            cfg.IndexFS,
		Logger:        logger,
		EventListener: &pebble.EventListener{BackgroundError: logger.backgroundError},
	})
	if err != nil {
		return nil, fmt.Errorf("entrystore: open index %s: %w", dir, err)
	}
	return db, nil
}

// mkdirAllSync creates dir and its missing parents in pebble's FS and
// syncs the parent of each one it created, top down, so that a crash
// cannot lose the directory pebble then syncs its files into.
func mkdirAllSync(fsys pvfs.FS, dir string) error {
	var missing []string // deepest first
	for d := dir; ; d = fsys.PathDir(d) {
		if _, err := fsys.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if fsys.PathDir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		parent, err := fsys.OpenDir(fsys.PathDir(missing[i]))
		if err != nil {
			return err
		}
		err = parent.Sync()
		if cerr := parent.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// lookupLocation returns the location of an entry, or ok false if the
// index has none.
func lookupLocation(db *pebble.DB, ledgerID, entryID int64) (loc uint64, ok bool, err error) {
	v, closer, err := db.Get(locationKey(ledgerID, entryID))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("entrystore: index lookup ledger %d entry %d: %w", ledgerID, entryID, err)
	}
	defer closer.Close()
	loc, err = decodeLocation(v)
	return loc, err == nil, err
}

// pebbleLogger sends pebble's messages to slog: informational ones at
// Debug (pebble is chatty about flushes and compactions), errors at Error.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	if p.l.Enabled(context.Background(), slog.LevelDebug) {
		p.l.Debug("pebble", "msg", fmt.Sprintf(format, args...))
	}
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("pebble error", "msg", fmt.Sprintf(format, args...))
}

// Fatalf is called by pebble for states it cannot continue from (a
// write or sync of its files failing, its directory gone); it must not
// return. The process stops at once, as a crash would, and says why. It
// does not panic: the panic would unwind through pebble's own deferred
// unlocks and end in an unrelated fatal error ("unlock of unlocked
// mutex") that hides this one.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error("the entry index (pebble) cannot continue; stopping the process", "msg", msg)
	exit(1)
}

// exit is os.Exit; a variable so that a test can see the call.
var exit = os.Exit

func (p pebbleLogger) backgroundError(err error) {
	p.l.Error("pebble background error", "err", err)
}
