package zkreal

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

	"keeper/internal/testhost"
)

// Where kazoo and its tests live (python3-kazoo, for the system Python,
// which sees the apt-installed kazoo and pytest).
const (
	KazooPython   = "/usr/bin/python3"
	KazooTestsDir = "/usr/lib/python3/dist-packages/kazoo/tests"
)

// kazooShim stands in for java when kazoo's harness starts a server: it
// runs "keeper server" on a copy of the harness's zoo.cfg, with the -D
// flags of zoo.cfg settings appended to the copy and the JAAS file's flag
// passed in SERVER_JVMFLAGS, as zkServer.sh passes it. exec keeps the pid,
// so the harness's SIGTERM reaches keeper.
const kazooShim = `#!/bin/bash
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
cp "$cfg" "$out"
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

// KazooRun is one run of kazoo's own tests through its harness.
type KazooRun struct {
	// Tests are pytest's node ids (a file, a class, a test).
	Tests []string
	// ClusterSize is the harness's ZOOKEEPER_CLUSTER_SIZE.
	ClusterSize int
	// Keeper, when set, is the keeper binary the harness starts instead
	// of Apache ZooKeeper (through a shim named java first on PATH).
	Keeper string
	// Timeout bounds the whole run (0: 5 minutes).
	Timeout time.Duration
}

// RunKazoo runs kazoo's tests and returns pytest's summary line and its
// whole output. A run that pytest reports failed is not an error here:
// the caller compares summaries.
func RunKazoo(t testing.TB, r KazooRun) (summary, output string) {
	t.Helper()
	if r.Timeout == 0 {
		r.Timeout = 5 * time.Minute
	}
	javaDir := ""
	if r.Keeper != "" {
		javaDir = t.TempDir()
		shim := strings.ReplaceAll(kazooShim, "KEEPER", r.Keeper)
		if err := os.WriteFile(filepath.Join(javaDir, "java"), []byte(shim), 0o755); err != nil {
			t.Fatal(err)
		}
	} else {
		java, _, err := locate()
		if err != nil {
			unavailable(t, err)
			return "", ""
		}
		javaDir = filepath.Dir(java)
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
	defer cancel()
	args := append([]string{"-m", "pytest", "-q", "-p", "no:cacheprovider"}, r.Tests...)
	cmd := exec.CommandContext(ctx, KazooPython, args...)
	cmd.Dir = t.TempDir()
	size := max(r.ClusterSize, 1)
	cmd.Env = append(os.Environ(),
		"PATH="+javaDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ZOOKEEPER_CLASSPATH="+ZooKeeperJar,
		"ZOOKEEPER_VERSION=3.8.0",
		"ZOOKEEPER_CLUSTER_SIZE="+strconv.Itoa(size),
		// kazoo's harness gives server i the client, election, leader and
		// admin ports offset+10i .. offset+10i+3.
		"ZOOKEEPER_PORT_OFFSET="+strconv.Itoa(testhost.Run(t, 10*(size-1)+4)),
	)
	out, _ := cmd.CombinedOutput()
	summary = string(regexp.MustCompile(`(?m)^\d+ (passed|failed).*$|^.*(failed|error).* in .*$`).Find(out))
	if ctx.Err() != nil {
		t.Fatalf("kazoo's tests did not end in %v:\n%s", r.Timeout, out)
	}
	return summary, string(out)
}
