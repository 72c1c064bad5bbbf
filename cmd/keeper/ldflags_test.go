package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLDFlagsScript: in a git checkout of this module, ldflags.sh prints
// the -X flags with HEAD's commit and time; copied anywhere that is not
// one, it prints nothing and succeeds, so the build goes on unstamped.
func TestLDFlagsScript(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	out, err := exec.Command("sh", "ldflags.sh").Output()
	if err != nil {
		t.Fatalf("ldflags.sh: %v", err)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	when, err := exec.Command("git", "log", "-1", "--format=%cI", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		"-X keeper/coordination/admin.linkedRevision=" + strings.TrimSpace(string(head)) + " ",
		"-X keeper/coordination/admin.linkedTime=" + strings.TrimSpace(string(when)) + " ",
		"-X keeper/coordination/admin.linkedModified=",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output %q lacks %q", got, want)
		}
	}

	// A copy of the source outside any repository.
	script, err := os.ReadFile("ldflags.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "cmd", "keeper")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ldflags.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", filepath.Join(dir, "ldflags.sh"))
	cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(filepath.Dir(dir)))
	out, err = cmd.Output()
	if err != nil || len(out) != 0 {
		t.Fatalf("outside a checkout: output %q, err %v; want none", out, err)
	}
}
