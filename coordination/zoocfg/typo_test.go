package zoocfg

import (
	"strings"
	"testing"
)

// TestTypo parses files with misspelt and unknown keys: Parse warns about
// each, and Typo picks out the misspelt ones with the key meant.
func TestTypo(t *testing.T) {
	tests := []struct {
		line  string
		known string // "" for not a typo
	}{
		{"tickTIme=2000", "tickTime"},
		{"initlimit=5", "initLimit"},
		{"maxClientCnxn=10", "maxClientCnxns"},
		{"localSessionEnabled=true", "localSessionsEnabled"},
		{"my.own.property=1", ""},
		{"tickTime=2000", ""},
	}
	for _, tt := range tests {
		_, warnings, err := Parse(strings.NewReader("dataDir=/tmp/x\n" + tt.line + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", tt.line, err)
		}
		got := ""
		for _, w := range warnings {
			if k, ok := Typo(w); ok {
				got = k
			}
		}
		if got != tt.known {
			t.Errorf("%s: typo of %q, want %q (warnings %v)", tt.line, got, tt.known, warnings)
		}
	}
}
