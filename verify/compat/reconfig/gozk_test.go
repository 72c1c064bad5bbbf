package reconfig

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"keeper/internal/keeperbin"
)

// zkServerShim stands in for zkServer.sh when go-zookeeper's own test
// harness starts a server ("zkServer.sh start-foreground <zoo.cfg>", the
// super user's digest and TTL nodes as -D flags in SERVER_JVMFLAGS): it
// runs "keeper server" on a copy of the zoo.cfg with those flags as keys,
// since keeper reads its settings from zoo.cfg (docs/configuration.md).
const zkServerShim = `#!/bin/bash
cfg="$2"
out="$cfg.keeper"
cp "$cfg" "$out"
for f in $SERVER_JVMFLAGS; do
  case "$f" in
    -Dzookeeper.emulate353TTLNodes=*) ;;
    -D*) echo "${f#-D}" >> "$out" ;;
  esac
done
unset SERVER_JVMFLAGS
exec KEEPER server "$out"
`

// TestGoZookeeperReconfig runs go-zookeeper's own reconfig integration
// tests (a node removed and a new one added incrementally; the members
// replaced as a whole, then restored) against three-server keeper
// clusters its harness starts with reconfigEnabled=true.
func TestGoZookeeperReconfig(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clusters of real processes")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := t.TempDir()
	shim := strings.ReplaceAll(zkServerShim, "KEEPER", keeperbin.ForTest(t))
	if err := os.WriteFile(filepath.Join(bin, "zkServer.sh"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "test", "-count=1", "-v",
		"-run", "^TestIntegration_(Incremental)?Reconfig$", "github.com/go-zookeeper/zk")
	cmd.Env = append(os.Environ(), "ZOOKEEPER_BIN_PATH="+bin, "ZK_VERSION=3.8.0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go-zookeeper's reconfig tests: %v\n%s", err, out)
	}
	for _, name := range []string{"TestIntegration_IncrementalReconfig", "TestIntegration_Reconfig"} {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass:\n%s", name, out)
		}
	}
}
