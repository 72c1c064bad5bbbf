package sasl

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"keeper/internal/keeperbin"
	"keeper/internal/testhost"
	"keeper/verify/compat/zkreal"
)

// Where kazoo and its tests live (python3-kazoo, for the system Python).
const (
	pythonPath   = "/usr/bin/python3"
	kazooSASLPy  = "/usr/lib/python3/dist-packages/kazoo/tests/test_sasl.py"
	suiteTimeout = 5 * time.Minute
)

// javaShim stands in for java when kazoo's harness starts a server: it
// runs "keeper server" on a copy of the harness's zoo.cfg, with the -D
// flags of zoo.cfg settings appended to the copy and the JAAS file's flag
// passed in SERVER_JVMFLAGS, as zkServer.sh passes it. exec keeps the pid,
// so the harness's SIGTERM reaches keeper. The harness writes
// reconfigEnabled=true, which keeper refuses until it has the reconfig
// operation (docs/configuration.md); the SASL tests never reconfigure, so
// the copy leaves the line out.
const javaShim = `#!/bin/bash
cfg=""; flags=()
while [ $# -gt 0 ]; do
  case "$1" in
    -cp|-classpath) shift ;;
    -D*) flags+=("$1") ;;
    org.apache.zookeeper.*) shift; cfg="$1" ;;
  esac
  shift
done
out="$cfg.keeper"
grep -v '^reconfigEnabled=' "$cfg" > "$out"
jvm=""
for f in "${flags[@]}"; do
  kv="${f#-D}"
  case "$kv" in
    java.security.auth.login.config=*) jvm="$jvm $f" ;;
    zookeeper.log.dir=*|zookeeper.root.logger=*) ;;
    zookeeper.*|readonlymode.enabled=*) echo "$kv" >> "$out" ;;
  esac
done
SERVER_JVMFLAGS="$jvm" exec KEEPER server "$out"
`

// runKazooSASL runs kazoo's test_sasl.py through kazoo's harness with java
// first on PATH (the shim, or the real one) and returns pytest's summary.
func runKazooSASL(t *testing.T, javaDir string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), suiteTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, pythonPath, "-m", "pytest", "-q", "-p", "no:cacheprovider", kazooSASLPy)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(),
		"PATH="+javaDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ZOOKEEPER_CLASSPATH="+zkreal.ZooKeeperJar,
		"ZOOKEEPER_VERSION=3.8.0",
		"ZOOKEEPER_CLUSTER_SIZE=1",
		// The client, election, leader and admin ports kazoo's harness
		// derives for a one-server cluster: four in a row from this one.
		"ZOOKEEPER_PORT_OFFSET="+strconv.Itoa(testhost.Run(t, 4)),
	)
	out, err := cmd.CombinedOutput()
	summary := regexp.MustCompile(`(?m)^\d+ passed.*$|^.*(failed|error).* in .*$`).Find(out)
	if err != nil {
		t.Fatalf("pytest: %v\n%s", err, out)
	}
	return string(summary)
}

// TestKazooSASL runs kazoo's own SASL tests against ZooKeeper and against
// keeper: the same tests must pass (the GSSAPI ones skip on both, as the
// harness has no Kerberos environment).
func TestKazooSASL(t *testing.T) {
	_, err := os.Stat(kazooSASLPy)
	require(t, "kazoo's tests", err)
	require(t, "pytest", exec.Command(pythonPath, "-c", "import pytest, puresasl").Run())
	if err := zkreal.Available(); err != nil {
		require(t, "Apache ZooKeeper", err)
	}
	want := runKazooSASL(t, filepath.Dir(mustLookJava(t)))
	t.Logf("zookeeper: %s", want)

	shimDir := t.TempDir()
	shim := regexp.MustCompile(`KEEPER`).ReplaceAllLiteralString(javaShim, keeperbin.ForTest(t))
	if err := os.WriteFile(filepath.Join(shimDir, "java"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	got := runKazooSASL(t, shimDir)
	t.Logf("keeper: %s", got)
	// test_sasl.py has four DIGEST-MD5 tests (two with sasl_options, two
	// with the legacy auth_data form) and two GSSAPI ones that skip.
	for name, summary := range map[string]string{"zookeeper": want, "keeper": got} {
		if !strings.HasPrefix(summary, "4 passed, 2 skipped") {
			t.Errorf("%s: %q, want 4 passed, 2 skipped", name, summary)
		}
	}
}

func mustLookJava(t *testing.T) string {
	t.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		java = "/usr/bin/java"
	}
	return java
}
