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

// PrebuiltEnv names a directory of binaries built once for a whole test
// run (make test builds them before go test starts): keeper, built
// without tags, and keeper-TAG[-TAG...] for each tag set the tests ask
// for (keeper-chaos). Every test package that runs keeper would otherwise
// link its own copy, about 7 s of CPU each on a 2-core machine. When it is
// set, Build for the working directory's module returns the binary there
// instead of building one, and fails if there is none for the tags
// asked: a binary that silently does not match what the run built would
// test something else.
const PrebuiltEnv = "KEEPER_PREBUILT_BIN"

// PrebuiltName is the file name of the binary built with tags in a
// PrebuiltEnv directory.
func PrebuiltName(tags ...string) string {
	return strings.Join(append([]string{"keeper"}, tags...), "-")
}

// Build builds ./cmd/keeper into dir, with the build tags given, and
// returns the binary's path. moduleDir is the module root; "" finds it
// with `go env GOMOD` from the working directory (a test's package
// directory), or takes the binary from PrebuiltEnv's directory if that is
// set.
func Build(dir, moduleDir string, tags ...string) (string, error) {
	if pre := os.Getenv(PrebuiltEnv); pre != "" && moduleDir == "" {
		bin := filepath.Join(pre, PrebuiltName(tags...))
		if st, err := os.Stat(bin); err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("keeperbin: %s=%s holds no executable %s", PrebuiltEnv, pre, PrebuiltName(tags...))
		}
		return bin, nil
	}
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
