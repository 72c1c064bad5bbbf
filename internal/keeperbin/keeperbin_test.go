package keeperbin

import (
	"os/exec"
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
