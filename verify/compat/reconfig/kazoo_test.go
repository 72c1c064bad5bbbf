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
// busy machine sometimes miss: ZooKeeper's run is tried up to three times,
// and if every failure of every try is that time-out, the reference could
// not run on this machine at this load and keeper's run is judged alone
// (it must pass all three either way).
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
	for try := 2; try <= 3 && !strings.HasPrefix(want, passed); try++ {
		t.Logf("zookeeper, run %d: %s", try-1, want)
		want, wantOut = zkreal.RunKazoo(t, run)
	}
	t.Logf("zookeeper: %s", want)
	run.Keeper = keeperbin.ForTest(t)
	got, gotOut := zkreal.RunKazoo(t, run)
	t.Logf("keeper: %s", got)
	runs := []struct{ name, summary, out string }{{"keeper", got, gotOut}}
	if !strings.HasPrefix(want, passed) && onlyStartTimeouts(wantOut) {
		t.Logf("zookeeper's cluster never took a client within the harness's 15 s in three tries; keeper judged alone")
	} else {
		runs = append(runs, struct{ name, summary, out string }{"zookeeper", want, wantOut})
	}
	for _, r := range runs {
		if !strings.HasPrefix(r.summary, passed) {
			t.Errorf("%s: %q, want %s\n%s", r.name, r.summary, passed, r.out)
		}
	}
}

// onlyStartTimeouts says whether every test that failed in pytest's output
// failed because the harness's client could not connect in time.
func onlyStartTimeouts(out string) bool {
	failed := strings.Count(out, "\nFAILED ")
	return failed > 0 && strings.Count(out, "KazooTimeoutError: Connection time-out") >= failed
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

func TestOnlyStartTimeouts(t *testing.T) {
	timeout := "E           kazoo.handlers.threading.KazooTimeoutError: Connection time-out\n"
	for _, c := range []struct {
		name, out string
		want      bool
	}{
		{"passed", "3 passed in 14.07s\n", false},
		{"two time-outs", timeout + timeout + "\nFAILED a::x\nFAILED a::y\n2 failed, 1 passed\n", true},
		{"a time-out and an assertion", timeout + "E   AssertionError\n\nFAILED a::x\nFAILED a::y\n", false},
	} {
		if got := onlyStartTimeouts(c.out); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
