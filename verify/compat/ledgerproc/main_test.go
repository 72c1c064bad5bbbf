package ledgerproc

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"keeper/internal/keeperbin"
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
	if keeperBin, err = keeperbin.Build(dir, ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
