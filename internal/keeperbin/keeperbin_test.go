package keeperbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuildRuns(t *testing.T) {
	bin := ForTest(t)
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "sandbox") {
		t.Fatalf("%s --help: %v\n%s", bin, err, out)
	}
	if _, err := Build(t.TempDir(), t.TempDir()); err == nil {
		t.Fatal("building outside the module succeeded")
	}
}

// TestPrebuilt: with PrebuiltEnv set, Build hands out the binary built for
// the tags asked, and refuses when there is none (or it is not
// executable) rather than build something else; a module named
// explicitly is still built from its sources.
func TestPrebuilt(t *testing.T) {
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"keeper": 0o755, "keeper-chaos": 0o755, "keeper-plain": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "keeper-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(PrebuiltEnv, dir)
	for _, tc := range []struct {
		tags []string
		want string // "" : an error
	}{
		{nil, "keeper"},
		{[]string{"chaos"}, "keeper-chaos"},
		{[]string{"invariants"}, ""},
		{[]string{"plain"}, ""}, // not executable
		{[]string{"dir"}, ""},   // not a file
	} {
		got, err := Build(t.TempDir(), "", tc.tags...)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("tags %v: got %s, want an error", tc.tags, got)
		case tc.want != "" && (err != nil || got != filepath.Join(dir, tc.want)):
			t.Errorf("tags %v: got %q, %v; want %s", tc.tags, got, err, filepath.Join(dir, tc.want))
		}
	}
	if got, err := Build(t.TempDir(), t.TempDir()); err == nil {
		t.Fatalf("a module directory named explicitly took the prebuilt %s", got)
	}
}
