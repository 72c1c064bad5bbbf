package reconfig

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"keeper/internal/keeperbin"
	"keeper/verify/compat/zkreal"
)

// TestKazooReconfig runs kazoo's TestReconfig (a reconfig without the
// super user refused; bad input refused; an observer added, removed, and
// added again with a configuration version from the future) on a
// three-server cluster of Apache ZooKeeper and of keeper, started by
// kazoo's harness with reconfigEnabled=true: both must pass all three.
// The harness gives a cluster 15 s to take a client, which three JVMs on a
// busy machine sometimes miss: ZooKeeper's run is tried twice.
func TestKazooReconfig(t *testing.T) {
	py := filepath.Join(zkreal.KazooTestsDir, "test_client.py")
	if _, err := os.Stat(py); err != nil {
		skipOrFail(t, "kazoo's tests", err)
	}
	if err := exec.Command(zkreal.KazooPython, "-c", "import pytest, kazoo").Run(); err != nil {
		skipOrFail(t, "pytest and kazoo", err)
	}
	if err := zkreal.Available(); err != nil {
		skipOrFail(t, "Apache ZooKeeper", err)
	}
	run := zkreal.KazooRun{Tests: []string{py + "::TestReconfig"}, ClusterSize: 3, Timeout: 4 * time.Minute}
	want, wantOut := zkreal.RunKazoo(t, run)
	if !strings.HasPrefix(want, passed) {
		t.Logf("zookeeper, first run: %s", want)
		want, wantOut = zkreal.RunKazoo(t, run)
	}
	t.Logf("zookeeper: %s", want)
	run.Keeper = keeperbin.ForTest(t)
	got, gotOut := zkreal.RunKazoo(t, run)
	t.Logf("keeper: %s", got)
	for _, r := range []struct{ name, summary, out string }{{"zookeeper", want, wantOut}, {"keeper", got, gotOut}} {
		if !strings.HasPrefix(r.summary, passed) {
			t.Errorf("%s: %q, want %s\n%s", r.name, r.summary, passed, r.out)
		}
	}
}

// passed is pytest's summary when all of TestReconfig passes.
const passed = "3 passed"

// skipOrFail skips the test for a missing prerequisite, or fails it when
// the run requires every reference program (KEEPER_REQUIRE_ZK).
func skipOrFail(t *testing.T, what string, err error) {
	t.Helper()
	if v := os.Getenv(zkreal.RequireEnv); v != "" && v != "0" {
		t.Fatalf("%s: %v", what, err)
	}
	t.Skipf("%s not available: %v", what, err)
}
