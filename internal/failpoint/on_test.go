//go:build chaos

package failpoint

import (
	"strings"
	"testing"
	"time"
)

// killed is what the test's Kill action panics with, standing for the
// process's end.
type killed string

// record installs actions that note what fired; Kill panics with killed.
func record(t *testing.T) *[]string {
	t.Helper()
	var fired []string
	SetActions(Actions{
		Kill:  func(name string) { fired = append(fired, "kill "+name); panic(killed(name)) },
		Sleep: func(name string, d time.Duration) { fired = append(fired, "sleep "+name+" "+d.String()) },
	})
	t.Cleanup(func() {
		SetActions(Actions{})
		if err := Load(nil); err != nil {
			t.Error(err)
		}
	})
	return &fired
}

// hit calls Hit and reports whether it ended "the process" (panicked with
// killed).
func hit(name string) (died bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(killed); !ok {
				panic(r)
			}
			died = true
		}
	}()
	Hit(name)
	return false
}

func TestUnarmedHitDoesNothing(t *testing.T) {
	fired := record(t)
	for _, n := range Names {
		if hit(n) {
			t.Fatalf("unarmed %s killed", n)
		}
	}
	if err := Load([]string{"failpoint name=learner-truncated action=kill"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range Names {
		if n != LearnerTruncated && hit(n) {
			t.Fatalf("unarmed %s killed", n)
		}
	}
	if len(*fired) != 0 {
		t.Fatalf("fired: %v", *fired)
	}
}

func TestHitCounts(t *testing.T) {
	tests := []struct {
		rule string
		hits int
		want string // per hit: k killed, s slept, . nothing
	}{
		{"failpoint name=learner-truncated action=kill", 3, "kkk"},
		{"failpoint name=learner-truncated action=kill after=2", 4, "..kk"},
		{"failpoint name=learner-truncated action=kill count=1", 3, "k.."},
		{"failpoint name=learner-truncated action=kill after=1 count=2", 5, ".kk.."},
		{"failpoint name=learner-truncated action=sleep=5ms after=1 count=1", 3, ".s."},
	}
	for _, tt := range tests {
		fired := record(t)
		if err := Load([]string{tt.rule}); err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for range tt.hits {
			n := len(*fired)
			switch {
			case hit(LearnerTruncated):
				got.WriteByte('k')
			case len(*fired) > n:
				got.WriteByte('s')
			default:
				got.WriteByte('.')
			}
		}
		if got.String() != tt.want {
			t.Errorf("%s: %d hits gave %q, want %q (%v)", tt.rule, tt.hits, got.String(), tt.want, *fired)
		}
	}
}

func TestLoadReplacesAndKeepsOnError(t *testing.T) {
	record(t)
	if err := Load([]string{"failpoint name=learner-truncated action=kill count=1"}); err != nil {
		t.Fatal(err)
	}
	if !hit(LearnerTruncated) || hit(LearnerTruncated) {
		t.Fatal("count=1 did not fire exactly once")
	}
	if err := Load([]string{"failpoint name=learner-truncated action=kill", "failpoint bad"}); err == nil {
		t.Fatal("a bad line was accepted")
	}
	if hit(LearnerTruncated) {
		t.Fatal("a failed Load changed the armed rules")
	}
	dup := []string{"failpoint name=learner-truncated action=kill", "failpoint name=learner-truncated action=panic"}
	if err := Load(dup); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("a failpoint armed twice: %v", err)
	}
	if err := Load([]string{"failpoint name=learner-truncated action=kill count=1"}); err != nil {
		t.Fatal(err)
	}
	if !hit(LearnerTruncated) {
		t.Fatal("reloading did not restart the count")
	}
	if err := Load([]string{"# nothing armed"}); err != nil {
		t.Fatal(err)
	}
	if hit(LearnerTruncated) {
		t.Fatal("an empty Load did not disarm")
	}
}

func TestPanicAndMissingActions(t *testing.T) {
	record(t)
	SetActions(Actions{})
	for _, line := range []string{"failpoint name=snap-before-rename action=panic",
		"failpoint name=snap-before-rename action=kill"} {
		if err := Load([]string{line}); err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), SnapBeforeRename) {
					t.Errorf("%s: recovered %v", line, r)
				}
			}()
			Hit(SnapBeforeRename)
		}()
	}
	if err := Load([]string{"failpoint name=snap-before-rename action=sleep=1ms"}); err != nil {
		t.Fatal(err)
	}
	Hit(SnapBeforeRename) // no Sleep action: nothing happens
}
