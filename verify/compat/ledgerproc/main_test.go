package ledgerproc

import (
	"flag"
	"os"
	"testing"

	"keeper/internal/keeperbin"
)

// keeperBin is the keeper binary TestMain builds for the whole run.
var keeperBin string

var binFlag = flag.String("keeper-bin", "", "run this keeper binary instead of building ./cmd/keeper")

func TestMain(m *testing.M) {
	os.Exit(keeperbin.RunTests(m, binFlag, &keeperBin))
}
