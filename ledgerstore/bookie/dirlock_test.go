package bookie

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"keeper/internal/vfs"
)

// TestSecondBookieRefusesDirs: while a bookie runs, another one that
// shares any of its journal, ledger or index directories refuses to start,
// with that directory and the holder's pid in the error; the first keeps
// serving, and its directories are free once it has closed (a bookie on
// the same directories then starts and serves what the first wrote).
func TestSecondBookieRefusesDirs(t *testing.T) {
	filesystems := []struct {
		name string
		// setup points cfg at the filesystem, under root.
		setup func(t *testing.T, cfg *Config) (root string)
	}{
		{"os", func(t *testing.T, cfg *Config) string {
			cfg.FS, cfg.StoreConfig = vfs.Default, nil // pebble on the real disk too
			return t.TempDir()
		}},
		{"mem", func(*testing.T, *Config) string { return "/" }},
	}
	tests := []struct {
		name      string
		second    func(c *Config, dir func(string) string)
		held      string
		sameStore bool // the second bookie is the first one, restarted
	}{
		{"the same directories", func(*Config, func(string) string) {}, "journal", true},
		{"the journal directory", func(c *Config, dir func(string) string) {
			c.LedgerDirs, c.IndexDir = []string{dir("other-ledgers")}, ""
		}, "journal", false},
		{"a ledger directory", func(c *Config, dir func(string) string) {
			c.JournalDirs, c.LedgerDirs, c.IndexDir = []string{dir("other-journal")}, []string{dir("ledgers1")}, dir("other-index")
		}, "ledgers1", false},
		{"the index directory", func(c *Config, dir func(string) string) {
			c.JournalDirs, c.LedgerDirs = []string{dir("other-journal")}, []string{dir("other-ledgers")}
		}, "index", false},
	}
	for _, fsys := range filesystems {
		for _, tc := range tests {
			t.Run(fsys.name+"/"+tc.name, func(t *testing.T) {
				e := newEnv(t, false)
				base := e.config()
				root := fsys.setup(t, &base)
				dir := func(name string) string { return filepath.Join(root, name) }
				base.JournalDirs = []string{dir("journal")}
				base.LedgerDirs = []string{dir("ledgers0"), dir("ledgers1")}
				base.IndexDir = dir("index")
				first := startBookie(t, base)
				c := dial(t, first)
				addEntries(t, c, 1, 0, 5)

				cfg := base
				tc.second(&cfg, dir)
				_, err := tryStartBookie(cfg)
				want := fmt.Sprintf("data directory %s is in use by another keeper process (pid %d); stop it first",
					dir(tc.held), os.Getpid())
				if !errors.Is(err, vfs.ErrLocked) || !strings.Contains(err.Error(), want) {
					t.Fatalf("second bookie: %v, want %q", err, want)
				}
				addEntries(t, c, 1, 5, 10) // the first still journals and serves
				for id := int64(0); id < 10; id++ {
					checkEntry(t, c, 1, id)
				}

				if err := first.Close(); err != nil {
					t.Fatal(err)
				}
				if !tc.sameStore {
					// Mixed disks are not one bookie's (the cookies or the
					// log mark would object): only the lock is checked.
					l, err := vfs.LockDirs(cfg.FS, dir(tc.held))
					if err != nil {
						t.Fatalf("lock after the first bookie closed: %v", err)
					}
					l.Close()
					return
				}
				c2 := dial(t, startBookie(t, cfg))
				for id := int64(0); id < 10; id++ {
					checkEntry(t, c2, 1, id)
				}
			})
		}
	}
}

// TestFailedBookieStartReleasesLock: a Start that fails after it locked
// the directories releases the lock with everything else it opened, so
// that the next bookie on them starts (and holds the lock in turn).
func TestFailedBookieStartReleasesLock(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	blocker := filepath.Join("/journal", "current")
	tests := []struct {
		name     string
		sabotage func(t *testing.T, e *env, c *Config)
		repair   func(t *testing.T, e *env)
	}{
		{name: "the port is taken", sabotage: func(_ *testing.T, _ *env, c *Config) {
			c.ListenAddr = busy.Addr().String()
		}},
		{name: "the journal cannot open", sabotage: func(t *testing.T, e *env, _ *Config) {
			// a file where the journal's current/ directory belongs
			if err := e.fs.MkdirAll("/journal", 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := e.fs.Create(blocker)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}, repair: func(t *testing.T, e *env) {
			if err := e.fs.Remove(blocker); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false)
			broken := e.config()
			tc.sabotage(t, e, &broken)
			if _, err := tryStartBookie(broken); err == nil || errors.Is(err, vfs.ErrLocked) {
				t.Fatalf("start: %v, want the failure the test set up", err)
			}
			if tc.repair != nil {
				tc.repair(t, e)
			}
			e.start()
			if _, err := e.tryStart(); !errors.Is(err, vfs.ErrLocked) {
				t.Fatalf("a bookie next to the restarted one: %v, want the directories locked", err)
			}
		})
	}
}

// tryStartBookie starts a bookie with cfg and returns Start's error.
func tryStartBookie(cfg Config) (*Bookie, error) {
	b, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := b.Start(context.Background()); err != nil {
		return nil, err
	}
	return b, nil
}

// startBookie starts a bookie with cfg and closes it at the end of the
// test.
func startBookie(t *testing.T, cfg Config) *Bookie {
	t.Helper()
	b, err := tryStartBookie(cfg)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}
