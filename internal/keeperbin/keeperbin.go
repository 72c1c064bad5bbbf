// Package keeperbin builds the module's keeper binary for tests and tools
// that run it as a real process (crash tests, ensembles, the chaos
// harness). The binary is built without the race detector: the processes
// under test run as users run them.
package keeperbin

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Build builds ./cmd/keeper into dir, with the build tags given, and
// returns the binary's path. moduleDir is the module root; "" finds it
// with `go env GOMOD` from the working directory (a test's package
// directory).
func Build(dir, moduleDir string, tags ...string) (string, error) {
	if moduleDir == "" {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			return "", fmt.Errorf("keeperbin: go env GOMOD: %w", err)
		}
		gomod := strings.TrimSpace(string(out))
		if gomod == "" || gomod == os.DevNull {
			return "", errors.New("keeperbin: not inside a Go module; give the module directory")
		}
		moduleDir = filepath.Dir(gomod)
	}
	bin := filepath.Join(dir, "keeper")
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, "./cmd/keeper")...)
	cmd.Dir = moduleDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("keeperbin: go build ./cmd/keeper: %w\n%s", err, out)
	}
	return bin, nil
}

// ForTest builds the binary into a directory of t's and returns its path,
// failing t if the build fails.
func ForTest(t testing.TB) string {
	t.Helper()
	bin, err := Build(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// RunTests is a test package's TestMain body for tests that run the binary:
// it parses the flags, takes *override as the binary if it is set (a
// -keeper-bin flag, say) or else builds it once for the whole run, sets
// *bin to its path, runs m and removes what it built. It returns m's exit
// code, or 1 if the build fails.
func RunTests(m *testing.M, override *string, bin *string) int {
	flag.Parse()
	if *override != "" {
		*bin = *override
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "keeper-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *bin, err = Build(dir, ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
