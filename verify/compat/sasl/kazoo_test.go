package sasl

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"keeper/internal/keeperbin"
	"keeper/verify/compat/zkreal"
)

// TestKazooSASL runs kazoo's own SASL tests against ZooKeeper and against
// keeper: the same tests must pass (the GSSAPI ones skip on both, as the
// harness has no Kerberos environment).
func TestKazooSASL(t *testing.T) {
	py := filepath.Join(zkreal.KazooTestsDir, "test_sasl.py")
	_, err := os.Stat(py)
	require(t, "kazoo's tests", err)
	require(t, "pytest", exec.Command(zkreal.KazooPython, "-c", "import pytest, puresasl").Run())
	if err := zkreal.Available(); err != nil {
		require(t, "Apache ZooKeeper", err)
	}
	want, wantOut := runKazooSASL(t, "zookeeper", zkreal.KazooRun{Tests: []string{py}})
	got, gotOut := runKazooSASL(t, "keeper", zkreal.KazooRun{Tests: []string{py}, Keeper: keeperbin.ForTest(t)})
	// test_sasl.py has four DIGEST-MD5 tests (two with sasl_options, two
	// with the legacy auth_data form) and two GSSAPI ones that skip.
	for _, r := range []struct{ name, summary, out string }{{"zookeeper", want, wantOut}, {"keeper", got, gotOut}} {
		if !strings.HasPrefix(r.summary, "4 passed, 2 skipped") {
			t.Errorf("%s: %q, want 4 passed, 2 skipped\n%s", r.name, r.summary, r.out)
		}
	}
}

// runKazooSASL runs kazoo's SASL tests, again (up to three runs) when the
// only failure is kazoo's own race in test_invalid_sasl_auth: its client
// sets "connected" before the SASL exchange and start() looks at it after,
// so a server that refuses the password before start() looks (a fast one,
// or a slow client thread) makes start() raise a connection time-out
// instead of AuthFailedError. Both mean the password was refused; the
// server sent AUTH_FAILED either way. Any other failure counts at once.
func runKazooSASL(t *testing.T, name string, r zkreal.KazooRun) (summary, output string) {
	t.Helper()
	for run := 1; ; run++ {
		summary, output = zkreal.RunKazoo(t, r)
		t.Logf("%s: %s", name, summary)
		if run == 3 || !kazooAuthRace(summary, output) {
			return summary, output
		}
		t.Logf("%s: kazoo's start() lost its race with the refused password (a time-out, not AuthFailedError); running again", name)
	}
}

// kazooAuthRace reports whether a run's one failure is
// test_invalid_sasl_auth ending in kazoo's connection time-out. The failing
// test is named by pytest's section header ("____ Class.test ____"), which
// every output format has; the short summary ("FAILED path::test") is not
// always printed, and log lines may hold "FAILED" too.
func kazooAuthRace(summary, output string) bool {
	if !strings.HasPrefix(summary, "1 failed, 3 passed") ||
		!strings.Contains(output, "KazooTimeoutError: Connection time-out") {
		return false
	}
	var failed []string
	for line := range strings.Lines(output) {
		line = strings.TrimSpace(line)
		name := strings.Trim(line, "_")
		if len(name) < len(line)-5 && strings.HasPrefix(line, "__") && strings.HasSuffix(line, "__") &&
			strings.HasPrefix(name, " ") && strings.HasSuffix(name, " ") {
			failed = append(failed, strings.TrimSpace(name))
		}
	}
	return len(failed) == 1 && (failed[0] == "test_invalid_sasl_auth" ||
		strings.HasSuffix(failed[0], ".test_invalid_sasl_auth"))
}
