package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"keeper/coordination/txnlog"
	"keeper/internal/vfs"
)

// TestSecondServerRefusesDataDir: while a server runs, another one whose
// dataDir or dataLogDir is one of its directories refuses to start, with
// the directory and the holder's pid in the error; the first keeps serving,
// and the second starts on the same directories once the first has closed.
func TestSecondServerRefusesDataDir(t *testing.T) {
	filesystems := []struct {
		name string
		fs   func(t *testing.T) (vfs.FS, string)
	}{
		{"os", func(t *testing.T) (vfs.FS, string) { return vfs.Default, t.TempDir() }},
		{"mem", func(*testing.T) (vfs.FS, string) { return vfs.NewMem(), "/" }},
	}
	tests := []struct {
		name              string
		firstData, first  string // the first server's dataDir and dataLogDir ("": its dataDir)
		secondData, secnd string // the second server's
		held              string // the directory the error names
	}{
		{name: "the same dataDir", firstData: "a", secondData: "a", held: "a"},
		{name: "its dataLogDir is the other's dataDir", firstData: "a", secondData: "b", secnd: "a", held: "a"},
		{name: "its dataDir is the other's dataLogDir", firstData: "a", first: "logs", secondData: "logs", held: "logs"},
	}
	for _, fsys := range filesystems {
		for _, tc := range tests {
			t.Run(fsys.name+"/"+tc.name, func(t *testing.T) {
				fs, root := fsys.fs(t)
				dir := func(name string) string {
					if name == "" {
						return ""
					}
					return filepath.Join(root, name)
				}
				storage := func(data, log string) func(*Config) {
					return func(c *Config) { c.Storage.DataDir, c.Storage.DataLogDir = dir(data), dir(log) }
				}
				first := mustStartDurable(t, durableConfig(fs, storage(tc.firstData, tc.first)))
				c := zkOpen(t, first)
				mustCreate(t, c, "/before", []byte("1"), 0, openACL)

				_, err := startDurable(t, durableConfig(fs, storage(tc.secondData, tc.secnd)))
				want := fmt.Sprintf("data directory %s is in use by another keeper process (pid %d); stop it first",
					dir(tc.held), os.Getpid())
				if !errors.Is(err, vfs.ErrLocked) || !strings.Contains(err.Error(), want) {
					t.Fatalf("second server on %s: %v, want %q", dir(tc.held), err, want)
				}
				mustCreate(t, c, "/after", []byte("2"), 0, openACL) // the first still writes its log
				if _, err := startDurable(t, durableConfig(fs, storage(tc.secondData, tc.secnd))); !errors.Is(err, vfs.ErrLocked) {
					t.Fatalf("a failed start released the first server's lock: %v", err)
				}

				if err := first.Close(); err != nil {
					t.Fatal(err)
				}
				second := mustStartDurable(t, durableConfig(fs, storage(tc.secondData, tc.secnd)))
				if tc.secondData == tc.firstData {
					c2 := zkOpen(t, second)
					for _, p := range []string{"/before", "/after"} {
						if ok, _, err := c2.Exists(p); err != nil || !ok {
							t.Errorf("%s after the restart: exists %v, err %v", p, ok, err)
						}
					}
				}
			})
		}
	}
}

// TestFailedStartReleasesLock: a Start that fails after it locked the data
// directories closes what it opened and releases the lock, so that the
// next server on them starts (and holds the lock in turn).
func TestFailedStartReleasesLock(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	brokenLayout := filepath.Join(durableDataDir, txnlog.DirName)
	tests := []struct {
		name     string
		sabotage func(t *testing.T, mem *vfs.MemFS, c *Config)
		repair   func(t *testing.T, mem *vfs.MemFS)
	}{
		{name: "recovery fails", sabotage: func(t *testing.T, mem *vfs.MemFS, _ *Config) {
			// a file where the version-2 directory belongs
			if err := mem.MkdirAll(durableDataDir, 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := mem.Create(brokenLayout)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}, repair: func(t *testing.T, mem *vfs.MemFS) {
			if err := mem.Remove(brokenLayout); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "the client port is taken", sabotage: func(_ *testing.T, _ *vfs.MemFS, c *Config) {
			c.ClientAddr = busy.Addr().String()
		}},
		{name: "the admin port is taken", sabotage: func(_ *testing.T, _ *vfs.MemFS, c *Config) {
			c.AdminAddr = busy.Addr().String()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			broken := durableConfig(mem, func(c *Config) { tc.sabotage(t, mem, c) })
			if _, err := startDurable(t, broken); err == nil || errors.Is(err, vfs.ErrLocked) {
				t.Fatalf("start: %v, want the failure the test set up", err)
			}
			if tc.repair != nil {
				tc.repair(t, mem)
			}
			mustStartDurable(t, durableConfig(mem))
			if _, err := startDurable(t, durableConfig(mem)); !errors.Is(err, vfs.ErrLocked) {
				t.Fatalf("a server next to the restarted one: %v, want the directory locked", err)
			}
		})
	}
}
