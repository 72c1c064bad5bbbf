//go:build !chaos

package failpoint

import "testing"

// TestReleaseHitDoesNothing: without the chaos tag no rule can be armed
// and Hit costs nothing.
func TestReleaseHitDoesNothing(t *testing.T) {
	if Enabled {
		t.Fatal("Enabled in a release build")
	}
	if err := Load([]string{"failpoint name=learner-truncated action=kill"}); err == nil {
		t.Fatal("a release build accepted a rule")
	}
	if err := Load([]string{"", "# nothing"}); err != nil {
		t.Fatalf("a release build refused an empty rule list: %v", err)
	}
	SetActions(Actions{Kill: func(string) { t.Fatal("killed") }})
	allocs := testing.AllocsPerRun(100, func() {
		for _, n := range Names {
			Hit(n)
		}
	})
	if allocs != 0 {
		t.Fatalf("Hit allocates %v times", allocs)
	}
}
