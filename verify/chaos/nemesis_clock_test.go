package chaos

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"keeper/internal/skewclock"
)

// TestWriteFaultLines: each hook's lines are replaced without touching the
// others'.
func TestWriteFaultLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "faults")
	for i, step := range []struct {
		hook  string
		lines []string
		want  string
	}{
		{"", []string{"ops=anysync err=EIO"}, "ops=anysync err=EIO\n"},
		{"clock", []string{"clock rate=2"}, "ops=anysync err=EIO\nclock rate=2\n"},
		{"failpoint", []string{"failpoint a", "failpoint b"}, "ops=anysync err=EIO\nclock rate=2\nfailpoint a\nfailpoint b\n"},
		{"clock", []string{"clock rate=0.5 offset=1s"}, "ops=anysync err=EIO\nfailpoint a\nfailpoint b\nclock rate=0.5 offset=1s\n"},
		{"", nil, "failpoint a\nfailpoint b\nclock rate=0.5 offset=1s\n"},
		{"failpoint", nil, "clock rate=0.5 offset=1s\n"},
		{"clock", nil, ""},
	} {
		if err := writeFaultLines(path, step.hook, step.lines...); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != step.want {
			t.Fatalf("step %d (%q %q): file %q, %v; want %q", i, step.hook, step.lines, got, err, step.want)
		}
	}
}

// TestClockVariantsSafe holds SkewClocks to its promise: under every
// variant a session lives at least half its timeout of real time after
// the leader last touched it (the session check's floor, see
// clockVariants).
func TestClockVariantsSafe(t *testing.T) {
	for _, v := range clockVariants {
		rate := v.leader.Rate
		if rate == 0 {
			rate = 1
		}
		if life := float64(100-v.leapPct) / 100 / rate; life < 0.5 {
			t.Errorf("%s: a session lives %.2f of its timeout after its last touch, below half", v.name, life)
		}
		if v.leader.Offset != 0 || v.follower.Offset != 0 {
			t.Errorf("%s: leaps go in leapPct, at half time", v.name)
		}
	}
}

func TestExpectedLife(t *testing.T) {
	const hold, timeout = 2 * time.Second, 2 * time.Second
	for _, tc := range []struct {
		v    clockVariant
		want time.Duration
	}{
		{clockVariant{}, 2 * time.Second},
		{clockVariant{leader: skewclock.Spec{Rate: 2}}, time.Second},
		// 1.5 s at 1.5× in the first second, a 300 ms leap, 200 ms more at 1.5×.
		{clockVariant{leader: skewclock.Spec{Rate: 1.5}, leapPct: 15}, 1133333333},
		// 1.5 s in the whole hold at 0.75×, then 500 ms at 1×.
		{clockVariant{leader: skewclock.Spec{Rate: 0.75}}, 2500 * time.Millisecond},
		// 1 s, then a leap of the other second.
		{clockVariant{leapPct: 50}, time.Second},
		{clockVariant{leapPct: 80}, time.Second},
	} {
		if got := expectedLife(tc.v, hold, timeout); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.v, got, tc.want)
		}
	}
}
