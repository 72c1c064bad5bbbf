package vfs_test

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"keeper/internal/vfs"
)

// TestLock: a second Lock of a held file fails with ErrLocked, whoever
// asks; other files are independent; Close releases the lock and leaves
// the file; a missing file is created, a missing directory is an error.
func TestLock(t *testing.T) {
	implementations(t, func(t *testing.T, fsys vfs.FS, root string) {
		mustOK(t, fsys.MkdirAll(root, 0o755))
		a, b := filepath.Join(root, "a.lock"), filepath.Join(root, "b.lock")
		steps := []struct {
			name       string
			lock       string // "" releases held[release]
			release    int
			wantLocked bool
		}{
			{name: "first lock of a", lock: a},
			{name: "second lock of a", lock: a, wantLocked: true},
			{name: "lock of b while a is held", lock: b},
			{name: "release a", release: 0},
			{name: "a again after its release", lock: a},
			{name: "b still held", lock: b, wantLocked: true},
		}
		var held []interface{ Close() error }
		for _, st := range steps {
			if st.lock == "" {
				mustOK(t, held[st.release].Close())
				continue
			}
			c, err := fsys.Lock(st.lock)
			switch {
			case st.wantLocked && !errors.Is(err, vfs.ErrLocked):
				t.Fatalf("%s: err %v, want ErrLocked", st.name, err)
			case !st.wantLocked && err != nil:
				t.Fatalf("%s: %v", st.name, err)
			case err == nil:
				held = append(held, c)
			}
		}
		for _, c := range held[1:] {
			mustOK(t, c.Close())
		}
		if err := held[0].Close(); err == nil {
			t.Error("closing a released lock succeeded")
		}
		if _, err := fsys.Stat(a); err != nil {
			t.Errorf("the lock file is gone after its release: %v", err)
		}
		if _, err := fsys.Lock(filepath.Join(root, "missing", "x.lock")); err == nil || errors.Is(err, vfs.ErrLocked) {
			t.Errorf("lock in a missing directory: %v, want a not-exist error", err)
		}
		if _, err := fsys.Lock(root); err == nil {
			t.Error("lock of a directory succeeded")
		}
	})
}

// TestLockDirs: the directories are created and locked, each records this
// process, a second LockDirs names the held directory and the holder's
// pid and keeps none of the locks it took, and Close lets the next holder
// in.
func TestLockDirs(t *testing.T) {
	implementations(t, func(t *testing.T, fsys vfs.FS, root string) {
		d1, d2, d3 := filepath.Join(root, "data"), filepath.Join(root, "log"), filepath.Join(root, "other")
		first, err := vfs.LockDirs(fsys, d1, d2, d1+"/") // d1 twice: locked once
		mustOK(t, err)
		for _, d := range []string{d1, d2} {
			got := readFile(t, fsys, filepath.Join(d, vfs.LockFileName))
			if want := fmt.Sprintf("version=1\npid=%d\ncommand=", os.Getpid()); !strings.HasPrefix(got, want) {
				t.Errorf("%s holds %q, want it to start with %q", d, got, want)
			}
		}
		tests := []struct {
			name    string
			dirs    []string
			wantDir string
		}{
			{"the same directories", []string{d1, d2}, d1},
			{"the log directory only", []string{d2}, d2},
			{"a free directory, then a held one", []string{d3, d1}, d1},
		}
		for _, tc := range tests {
			l, err := vfs.LockDirs(fsys, tc.dirs...)
			var inUse *vfs.InUseError
			if !errors.As(err, &inUse) || !errors.Is(err, vfs.ErrLocked) {
				l.Close()
				t.Fatalf("%s: err %v, want an InUseError", tc.name, err)
			}
			want := fmt.Sprintf("data directory %s is in use by another keeper process (pid %d); stop it first",
				tc.wantDir, os.Getpid())
			if inUse.Dir != tc.wantDir || inUse.PID != os.Getpid() || err.Error() != want {
				t.Errorf("%s: %q (dir %q pid %d), want %q", tc.name, err, inUse.Dir, inUse.PID, want)
			}
		}
		third, err := vfs.LockDirs(fsys, d3) // the failed attempt above released it
		mustOK(t, err)
		mustOK(t, third.Close())
		mustOK(t, first.Close())
		mustOK(t, first.Close()) // a second Close does nothing
		again, err := vfs.LockDirs(fsys, d1, d2)
		mustOK(t, err)
		mustOK(t, again.Close())
	})
}

// TestMemCrashReleasesLocks: a crash ends the process, so the MemFS it
// leaves holds no locks.
func TestMemCrashReleasesLocks(t *testing.T) {
	mem := vfs.NewMem()
	l, err := vfs.LockDirs(mem, "/data")
	mustOK(t, err)
	defer l.Close()
	mustOK(t, mem.SyncDir("/data")) // the lock file survives the crash
	crashed := mem.CrashClone(nil)
	l2, err := vfs.LockDirs(crashed, "/data")
	mustOK(t, err)
	mustOK(t, l2.Close())
	if _, err := vfs.LockDirs(mem, "/data"); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("the original MemFS: %v, want the lock still held", err)
	}
}

// lockHelperEnv names the directory TestLockHelperProcess locks when the
// test binary runs as the helper of TestLockAcrossProcesses.
const lockHelperEnv = "KEEPER_VFS_LOCK_HELPER_DIR"

// TestLockHelperProcess is not a test: TestLockAcrossProcesses runs the
// test binary with lockHelperEnv set, and then it locks the directory,
// says so on stdout and holds the lock until stdin closes or it is killed.
func TestLockHelperProcess(t *testing.T) {
	dir := os.Getenv(lockHelperEnv)
	if dir == "" {
		t.Skip("runs only as TestLockAcrossProcesses's helper process")
	}
	l, err := vfs.LockDirs(vfs.Default, dir)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	_ = l.Close()
	os.Exit(0)
}

// TestLockAcrossProcesses: the OS lock keeps another process out, with
// its pid in the error, and a process killed with SIGKILL leaves a lock
// file that blocks nobody.
func TestLockAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	mustOK(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	mustOK(t, err)
	mustOK(t, cmd.Start())
	defer cmd.Process.Kill()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if s != "locked\n" {
			t.Fatalf("helper said %q, want locked", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the helper process did not lock in 30s")
	}

	_, err = vfs.LockDirs(vfs.Default, dir)
	var inUse *vfs.InUseError
	if !errors.As(err, &inUse) || inUse.PID != cmd.Process.Pid {
		t.Fatalf("lock held by pid %d: err %v, want an InUseError naming that pid", cmd.Process.Pid, err)
	}
	if !strings.Contains(err.Error(), "(pid "+strconv.Itoa(cmd.Process.Pid)+")") {
		t.Errorf("message %q does not name the holder's pid", err)
	}

	mustOK(t, cmd.Process.Kill()) // SIGKILL: no Close, the kernel releases the lock
	_ = cmd.Wait()
	l, err := vfs.LockDirs(vfs.Default, dir)
	if err != nil {
		t.Fatalf("lock after the holder was killed: %v", err)
	}
	defer l.Close()
	b, err := os.ReadFile(filepath.Join(dir, vfs.LockFileName))
	mustOK(t, err)
	if !strings.Contains(string(b), "pid="+strconv.Itoa(os.Getpid())+"\n") {
		t.Errorf("lock file holds %q, want this process's pid", b)
	}
	if _, err := os.Stat(filepath.Join(dir, vfs.LockFileName)); errors.Is(err, fs.ErrNotExist) {
		t.Error("lock file missing")
	}
}
