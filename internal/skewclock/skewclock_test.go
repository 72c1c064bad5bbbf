package skewclock

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		lines []string
		want  Spec
		err   string // a substring of the error; "" for none
	}{
		{lines: nil, want: Spec{}},
		{lines: []string{"", "  "}, want: Spec{}},
		{lines: []string{"clock rate=1.5"}, want: Spec{Rate: 1.5}},
		{lines: []string{"clock rate=0.5 offset=+3s"}, want: Spec{Rate: 0.5, Offset: 3 * time.Second}},
		{lines: []string{"  clock   offset=500ms\trate=2  "}, want: Spec{Rate: 2, Offset: 500 * time.Millisecond}},
		{lines: []string{"clock step=-1h"}, want: Spec{Step: -time.Hour}},
		{lines: []string{"clock step=+2s offset=0s"}, want: Spec{Step: 2 * time.Second}},
		{lines: []string{"clock reset"}, want: Spec{}},
		// Later lines override the fields they name; reset clears all.
		{lines: []string{"clock rate=2 offset=1s", "clock rate=3"}, want: Spec{Rate: 3, Offset: time.Second}},
		{lines: []string{"clock rate=2", "clock reset", "clock step=1s"}, want: Spec{Step: time.Second}},
		{lines: []string{"clock rate=100"}, want: Spec{Rate: 100}},
		{lines: []string{"clock offset=24h"}, want: Spec{Offset: 24 * time.Hour}},

		{lines: []string{"clock"}, err: "want"},
		{lines: []string{"clocks rate=2"}, err: "want"},
		{lines: []string{"ops=anysync err=EIO"}, err: "want"},
		{lines: []string{"clock reset now"}, err: "not key=value"},
		{lines: []string{"clock rate"}, err: "not key=value"},
		{lines: []string{"clock rate="}, err: "not key=value"},
		{lines: []string{"clock rate=0"}, err: "rate"},
		{lines: []string{"clock rate=-1"}, err: "rate"},
		{lines: []string{"clock rate=NaN"}, err: "rate"},
		{lines: []string{"clock rate=Inf"}, err: "rate"},
		{lines: []string{"clock rate=101"}, err: "rate"},
		{lines: []string{"clock rate=fast"}, err: "rate"},
		{lines: []string{"clock offset=-1s"}, err: "duration"},
		{lines: []string{"clock offset=25h"}, err: "duration"},
		{lines: []string{"clock offset=3"}, err: "duration"},
		{lines: []string{"clock step=1y"}, err: "duration"},
		{lines: []string{"clock rate=2 rate=3"}, err: "twice"},
		{lines: []string{"clock skew=2"}, err: "unknown key"},
		{lines: []string{"clock rate=2", "clock bogus"}, err: "not key=value"},
	} {
		got, err := Parse(tc.lines)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Parse(%q) = %+v, %v; want an error with %q", tc.lines, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.lines, got, err, tc.want)
		}
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{}, "clock reset"},
		{Spec{Rate: 1}, "clock reset"},
		{Spec{Rate: 1.5}, "clock rate=1.5"},
		{Spec{Rate: 0.5, Offset: 3 * time.Second}, "clock rate=0.5 offset=3s"},
		{Spec{Offset: 500 * time.Millisecond, Step: -time.Hour}, "clock offset=500ms step=-1h0m0s"},
	} {
		if got := tc.spec.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.spec, got, tc.want)
		}
		back, err := Parse([]string{tc.spec.String()})
		if err != nil || back.rate() != tc.spec.rate() || back.Offset != tc.spec.Offset || back.Step != tc.spec.Step {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.spec.String(), back, err, tc.spec)
		}
	}
}

// TestClock drives a clock through rate changes, leaps, steps and resets
// with made-up real readings, and checks each skewed reading.
func TestClock(t *testing.T) {
	epoch := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := time.Second
	type step struct {
		at       time.Duration // the real reading (monotonic; the wall is epoch+at)
		set      *Spec         // set this spec at `at` first
		wantMono time.Duration
		wantWall time.Duration // the skewed wall, less epoch
	}
	spec := func(sp Spec) *Spec { return &sp }
	steps := []step{
		{at: 0, wantMono: 0, wantWall: 0},
		{at: 2 * s, wantMono: 2 * s, wantWall: 2 * s},
		// 1.5× from 2 s on: no jump when the rate changes.
		{at: 2 * s, set: spec(Spec{Rate: 1.5}), wantMono: 2 * s, wantWall: 2 * s},
		{at: 4 * s, wantMono: 5 * s, wantWall: 4 * s},
		// Loading the same spec again changes nothing.
		{at: 4 * s, set: spec(Spec{Rate: 1.5}), wantMono: 5 * s, wantWall: 4 * s},
		{at: 6 * s, wantMono: 8 * s, wantWall: 6 * s},
		// A leap of 1 s at 1.5×, and the time of day 1 h behind.
		{at: 6 * s, set: spec(Spec{Rate: 1.5, Offset: s, Step: -time.Hour}), wantMono: 9 * s, wantWall: 6*s - time.Hour},
		{at: 6 * s, set: spec(Spec{Rate: 1.5, Offset: s, Step: -time.Hour}), wantMono: 9 * s, wantWall: 6*s - time.Hour},
		// Raising the offset leaps by the difference; 0.5× from here.
		{at: 8 * s, set: spec(Spec{Rate: 0.5, Offset: 3 * s}), wantMono: 14 * s, wantWall: 8 * s},
		{at: 12 * s, wantMono: 16 * s, wantWall: 12 * s},
		// Lowering it leaps nowhere: the monotonic reading never goes back.
		{at: 12 * s, set: spec(Spec{Rate: 0.5, Offset: s}), wantMono: 16 * s, wantWall: 12 * s},
		// A reset: rate 1, the true time of day; the monotonic lead stays.
		{at: 14 * s, set: spec(Spec{}), wantMono: 17 * s, wantWall: 14 * s},
		{at: 15 * s, wantMono: 18 * s, wantWall: 15 * s},
		// After a reset the same offset leaps again.
		{at: 15 * s, set: spec(Spec{Offset: s}), wantMono: 19 * s, wantWall: 15 * s},
		// A real reading from before the last change reads as that moment.
		{at: 14 * s, wantMono: 19 * s, wantWall: 14 * s},
	}
	var c Clock
	for i, st := range steps {
		if st.set != nil {
			c.Set(*st.set, st.at)
		}
		wall, mono := c.Read(epoch.Add(st.at), st.at)
		if mono != st.wantMono || wall.Sub(epoch) != st.wantWall {
			t.Errorf("step %d (real %v, spec %+v): mono %v wall %+v; want %v %v",
				i, st.at, c.Spec(), mono, wall.Sub(epoch), st.wantMono, st.wantWall)
		}
	}
}

// TestClockMonotonic reads a clock at every millisecond while its spec
// changes now and then: the monotonic reading never goes back.
func TestClockMonotonic(t *testing.T) {
	specs := []Spec{{Rate: 100}, {Rate: 0.01}, {Offset: time.Hour}, {}, {Rate: 3, Offset: time.Minute}, {Rate: 0.5}}
	var c Clock
	var last time.Duration
	for ms := range 10000 {
		at := time.Duration(ms) * time.Millisecond
		if ms%997 == 0 {
			c.Set(specs[(ms/997)%len(specs)], at)
		}
		_, mono := c.Read(time.Time{}, at)
		if mono < last {
			t.Fatalf("at %v (spec %+v): mono %v after %v", at, c.Spec(), mono, last)
		}
		last = mono
	}
}

// FuzzParse feeds Parse arbitrary lines: it must not panic, and a spec it
// accepts must render to a line that parses back to the same spec.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"clock rate=1.5", "clock rate=0.5 offset=+3s", "clock reset",
		"clock step=-1h offset=0s", "clock rate=1e-3", "clock offset=1.5h", "clock rate=2\nclock reset"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		spec, err := Parse(strings.Split(text, "\n"))
		if err != nil {
			return
		}
		back, err := Parse([]string{spec.String()})
		if err != nil || back.rate() != spec.rate() || back.Offset != spec.Offset || back.Step != spec.Step {
			t.Fatalf("%q parsed to %+v, rendered %q, parsed back to %+v, %v", text, spec, spec.String(), back, err)
		}
	})
}
