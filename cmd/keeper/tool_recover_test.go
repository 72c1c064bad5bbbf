package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/server"
	"keeper/coordination/snap"
	"keeper/coordination/txnlog"
	"keeper/coordination/zkcore"
	"keeper/coordination/zxid"
	"keeper/internal/vfs"
)

// startErr starts a server on dir and returns Start's error, closing the
// server if it started.
func startErr(t *testing.T, dir string) error {
	t.Helper()
	cfg := server.Config{ClientAddr: "127.0.0.1:0", Core: zkcore.DefaultConfig()}
	cfg.Core.ExtendedTypes = true
	cfg.Storage = server.StorageConfig{DataDir: dir, PreAllocSizeBytes: 64 << 10, SnapCount: 20}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		return err
	}
	return s.Close()
}

// fileContents maps every file under dir (relative path) to its bytes.
func fileContents(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == vfs.LockFileName {
			return err
		}
		b, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// damageLastLog restarts a server on dir to log a few more txns in a new
// file, then flips a bit in the payload of a middle record of that file
// and returns the file and the record's offset.
func damageLastLog(t *testing.T, dir string) (string, int64) {
	t.Helper()
	s := toolServer(t, dir)
	c, _, err := zk.Connect([]string{s.Addr().String()}, 10*time.Second, zk.WithLogger(quietZK{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := c.Create(fmt.Sprintf("/late%d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	files := logFiles(t, dir)
	path := files[len(files)-1].Path
	offs, _ := recordStarts(t, path)
	if len(offs) < 3 {
		t.Fatalf("%s has %d records; the test needs 3", path, len(offs))
	}
	bad := offs[len(offs)/2]
	flip(t, path, bad+12+30)
	return path, bad
}

// damageNewestSnapshot flips a bit in the middle of the newest snapshot
// and removes the log files after the snapshot before it: the older one
// and its log end before the newest.
func damageNewestSnapshot(t *testing.T, dir string) {
	t.Helper()
	infos, err := snap.List(vfs.Default, filepath.Join(dir, txnlog.DirName))
	if err != nil || len(infos) < 2 {
		t.Fatalf("snapshots %v %v; the test needs 2", infos, err)
	}
	for _, f := range logFiles(t, dir) {
		if f.Start > infos[1].Zxid {
			if err := os.Remove(f.Path); err != nil {
				t.Fatal(err)
			}
		}
	}
	flip(t, filepath.Join(dir, txnlog.DirName, infos[0].Name), infos[0].Size/2)
}

// keepOnlyDamagedSnapshot leaves only the newest snapshot, with a bit
// flipped, and no log.
func keepOnlyDamagedSnapshot(t *testing.T, dir string) {
	t.Helper()
	infos, err := snap.List(vfs.Default, filepath.Join(dir, txnlog.DirName))
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos[1:] {
		if err := os.Remove(filepath.Join(dir, txnlog.DirName, info.Name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range logFiles(t, dir) {
		if err := os.Remove(f.Path); err != nil {
			t.Fatal(err)
		}
	}
	flip(t, filepath.Join(dir, txnlog.DirName, infos[0].Name), infos[0].Size/2)
}

func writeEpochFiles(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{"acceptedEpoch", "currentEpoch"} {
		if err := os.WriteFile(filepath.Join(dir, txnlog.DirName, name), []byte("1"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestToolRecover(t *testing.T) {
	base := toolData(t)
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		args   []string // after "recover <dir>"
		// out is in the output; err, when not "", in the error, and then
		// no file changes.
		out []string
		err string
		// kept is what the server starts with afterwards: "plan" for the
		// plan's Kept, "empty" for zxid 0.
		kept string
	}{
		{name: "nothing damaged", out: []string{"keep: ", "nothing to set aside"}, kept: "plan"},
		{name: "plan only", damage: func(t *testing.T, dir string) { damageLastLog(t, dir) },
			out: []string{"copy aside", "then cut it at offset", "lost: every txn after zxid"}, err: "without --yes"},
		{name: "the middle of the log", damage: func(t *testing.T, dir string) { damageLastLog(t, dir) }, args: []string{"--yes"},
			out: []string{"the log stops being usable there: txnlog: corrupt log", "copy aside", "moved into"}, kept: "plan"},
		{name: "newest snapshot, the logs after the one before gone", damage: damageNewestSnapshot, args: []string{"--yes", "--aside", "mine"},
			out: []string{"set aside ", "snap: corrupt snapshot", "lost: every txn after zxid", "moved into "}, kept: "plan"},
		{name: "only snapshot damaged, no log", damage: keepOnlyDamagedSnapshot, args: []string{"--yes"},
			out: []string{"nothing can be kept: no usable snapshot", "holds no snapshot or log now"}, kept: "empty"},
		{name: "ensemble member", damage: func(t *testing.T, dir string) { damageLastLog(t, dir); writeEpochFiles(t, dir) },
			args: []string{"--yes"}, out: []string{"ensemble member: "}, err: "snapshot.trust.empty=true"},
		{name: "ensemble member, --member", damage: func(t *testing.T, dir string) { damageLastLog(t, dir); writeEpochFiles(t, dir) },
			args: []string{"--yes", "--member"}, out: []string{"moved into "}},
		{name: "aside directory taken", damage: func(t *testing.T, dir string) {
			damageLastLog(t, dir)
			if err := os.Mkdir(filepath.Join(dir, "taken"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, args: []string{"--yes", "--aside", "taken"}, err: "already exists"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
				t.Fatal(err)
			}
			if tc.damage != nil {
				tc.damage(t, dir)
			}
			before := fileContents(t, dir)
			plan, err := server.PlanRecovery(vfs.Default, dir, "", jute1MB)
			if err != nil {
				t.Fatal(err)
			}
			if !plan.Empty() && len(plan.Epochs) == 0 && !errors.Is(startErr(t, dir), server.ErrUnaccounted) {
				t.Fatal("start-up accepts the damaged directory")
			}
			out, err := runTool(t, append([]string{"recover", dir}, tc.args...)...)
			t.Logf("keeper tool recover %s %v:\n%s", dir, tc.args, out)
			for _, want := range tc.out {
				if !strings.Contains(out, want) {
					t.Fatalf("the output does not say %q:\n%s", want, out)
				}
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("recover: %v, want an error saying %q\n%s", err, tc.err, out)
				}
				if after := fileContents(t, dir); !sameFiles(before, after) {
					t.Fatalf("files changed though recover failed")
				}
				return
			}
			if err != nil {
				t.Fatalf("recover: %v\n%s", err, out)
			}
			checkNothingLost(t, before, fileContents(t, dir), plan)
			if tc.kept == "" {
				return
			}
			want := plan.Kept
			if tc.kept == "empty" {
				want = 0
			}
			s := toolServer(t, dir)
			var got zxid.ID
			s.Inspect(func(core *zkcore.Server) { got = core.LastZxid() })
			if got != want {
				t.Fatalf("the server starts at zxid %v, want %v", got, want)
			}
		})
	}
}

// jute1MB is the tools' default record bound.
const jute1MB = 0xfffff + 1024

func sameFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for name, data := range a {
		if !bytes.Equal(b[name], data) {
			return false
		}
	}
	return true
}

// checkNothingLost checks that every file of before is still in version-2,
// or set aside whole: the log file the plan cuts is set aside whole and
// what stays of it is a prefix of it.
func checkNothingLost(t *testing.T, before, after map[string][]byte, plan *server.RecoveryPlan) {
	t.Helper()
	var asideNames []string
	for name := range after {
		if !strings.HasPrefix(name, txnlog.DirName+string(filepath.Separator)) {
			asideNames = append(asideNames, name)
		}
	}
	for name, data := range before {
		base := filepath.Base(name)
		var found bool
		for _, a := range asideNames {
			found = found || (filepath.Base(a) == base && bytes.Equal(after[a], data))
		}
		kept, ok := after[name]
		switch {
		case plan.CutLog != "" && base == filepath.Base(plan.CutLog):
			if !found || !ok || !bytes.HasPrefix(data, kept) || int64(len(kept)) != plan.CutOffset {
				t.Fatalf("%s: cut to %d bytes (want %d), set aside whole: %v", name, len(kept), plan.CutOffset, found)
			}
		case ok && !bytes.Equal(kept, data):
			t.Fatalf("%s changed in place", name)
		case !ok && !found:
			t.Fatalf("%s is gone, and not set aside", name)
		}
	}
	slices.Sort(asideNames)
	t.Logf("set aside: %v", asideNames)
}
