package ledgerproc

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// keeperBin is the keeper binary TestMain builds for the whole run.
var keeperBin string

var binFlag = flag.String("keeper-bin", "", "run this keeper binary instead of building ./cmd/keeper")

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if *binFlag != "" {
		keeperBin = *binFlag
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "keeper-ledgerproc-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if keeperBin, err = buildKeeper(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// buildKeeper builds ./cmd/keeper of this module into dir (without the
// race detector: the processes under test run as users run them).
func buildKeeper(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	bin := filepath.Join(dir, "keeper")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/keeper")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(out)))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/keeper: %w\n%s", err, out)
	}
	return bin, nil
}
