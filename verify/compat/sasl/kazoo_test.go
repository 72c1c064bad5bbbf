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
	want, wantOut := zkreal.RunKazoo(t, zkreal.KazooRun{Tests: []string{py}})
	t.Logf("zookeeper: %s", want)
	got, gotOut := zkreal.RunKazoo(t, zkreal.KazooRun{Tests: []string{py}, Keeper: keeperbin.ForTest(t)})
	t.Logf("keeper: %s", got)
	// test_sasl.py has four DIGEST-MD5 tests (two with sasl_options, two
	// with the legacy auth_data form) and two GSSAPI ones that skip.
	for _, r := range []struct{ name, summary, out string }{{"zookeeper", want, wantOut}, {"keeper", got, gotOut}} {
		if !strings.HasPrefix(r.summary, "4 passed, 2 skipped") {
			t.Errorf("%s: %q, want 4 passed, 2 skipped\n%s", r.name, r.summary, r.out)
		}
	}
}
