// Package skewclock is the skewable clock of a chaos build's server: the
// "clock …" lines of its fault file (Parse) and a clock that skews the
// real clock's readings as they say (Clock). It is pure: the caller reads
// the real clock and passes the readings in.
//
// The model follows the two readings a server takes (server.Clock): the
// monotonic reading, which times everything that lasts (session expiry,
// ticks, Zab's timeouts), and the time of day, which only stamps txns.
// A fast or slow oscillator and a forward leap (time the process did not
// see pass) move the monotonic reading; an NTP step moves the time of
// day. The time of day is otherwise left true, so that txn times stay
// comparable with other processes' clocks (the chaos harness reads the
// moment of an expiry from its closeSession txn's time).
//
// The grammar, one directive per line, fields in any order:
//
//	clock rate=1.5             monotonic time runs 1.5× (0 < rate ≤ 100)
//	clock offset=+500ms        monotonic time leaps 500 ms ahead (≥ 0)
//	clock step=-3s             the time of day is set 3 s behind the truth
//	clock rate=0.5 offset=1s   several at once
//	clock reset                the true clock again
//
// The lines describe a state, not actions, so that loading the same file
// twice changes nothing: rate applies from the moment it is loaded on,
// with no jump then; offset is the total leap since the last reset, so
// raising it leaps by the difference and lowering it leaps nowhere (the
// monotonic reading never goes back); step is absolute. A later line
// overrides the fields it names; no line at all, or "clock reset", is the
// true clock: rate 1, time of day true, and the monotonic reading keeps
// whatever lead or lag it gathered.
package skewclock

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limits of the grammar.
const (
	// MaxRate bounds rate: a server ticks at most a few times per tick of
	// real time (server.clockTicks), so more would not show anyway.
	MaxRate = 100
	// MaxOffset and MaxStep bound offset and step.
	MaxOffset = 24 * time.Hour
	MaxStep   = 100 * 365 * 24 * time.Hour
)

// Spec is the clock the fault file asks for. The zero Spec is the true
// clock.
type Spec struct {
	// Rate is how many seconds the monotonic reading advances per real
	// second; 0 means 1.
	Rate float64
	// Offset is how far the monotonic reading has leapt ahead since the
	// last reset.
	Offset time.Duration
	// Step is how far the time of day is set off the true time.
	Step time.Duration
}

// rate is Rate with 0 read as 1.
func (s Spec) rate() float64 {
	if s.Rate == 0 {
		return 1
	}
	return s.Rate
}

// True reports whether s is the true clock (a reset).
func (s Spec) True() bool { return s.rate() == 1 && s.Offset == 0 && s.Step == 0 }

// String renders s as one line Parse reads back: "clock reset" for the
// true clock.
func (s Spec) String() string {
	if s.True() {
		return "clock reset"
	}
	var b strings.Builder
	b.WriteString("clock")
	if r := s.rate(); r != 1 {
		b.WriteString(" rate=" + strconv.FormatFloat(r, 'g', -1, 64))
	}
	if s.Offset != 0 {
		b.WriteString(" offset=" + s.Offset.String())
	}
	if s.Step != 0 {
		b.WriteString(" step=" + s.Step.String())
	}
	return b.String()
}

// Parse reads "clock …" lines (blank lines are skipped) into the Spec
// they describe together.
func Parse(lines []string) (Spec, error) {
	var s Spec
	for _, line := range lines {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if fields[0] != "clock" || len(fields) == 1 {
			return Spec{}, fmt.Errorf("skewclock: %q: want \"clock reset\" or \"clock key=value ...\"", line)
		}
		if len(fields) == 2 && fields[1] == "reset" {
			s = Spec{}
			continue
		}
		if err := s.parseFields(fields[1:]); err != nil {
			return Spec{}, fmt.Errorf("skewclock: %q: %w", line, err)
		}
	}
	return s, nil
}

// parseFields sets the key=value fields of one line.
func (s *Spec) parseFields(fields []string) error {
	seen := map[string]bool{}
	for _, f := range fields {
		key, val, ok := strings.Cut(f, "=")
		if !ok || val == "" {
			return fmt.Errorf("%q is not key=value", f)
		}
		if seen[key] {
			return fmt.Errorf("%s given twice", key)
		}
		seen[key] = true
		var err error
		switch key {
		case "rate":
			s.Rate, err = parseRate(val)
		case "offset":
			s.Offset, err = parseDuration(val, 0, MaxOffset)
		case "step":
			s.Step, err = parseDuration(val, -MaxStep, MaxStep)
		default:
			err = fmt.Errorf("unknown key %q (rate, offset, step)", key)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func parseRate(v string) (float64, error) {
	r, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(r) || r <= 0 || r > MaxRate {
		return 0, fmt.Errorf("rate %q: want a number in (0, %d]", v, MaxRate)
	}
	return r, nil
}

func parseDuration(v string, lo, hi time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		return 0, fmt.Errorf("duration %q: want one in [%v, %v]", v, lo, hi)
	}
	return d, nil
}

// Clock skews a real clock's readings as its Spec says. The zero Clock is
// the true clock. It is not safe for concurrent use, and the caller
// passes real monotonic readings that do not go back.
type Clock struct {
	spec   Spec
	realAt time.Duration // the real monotonic reading when spec was set
	monoAt time.Duration // the skewed monotonic reading then
}

// Spec returns the spec in force.
func (c *Clock) Spec() Spec { return c.spec }

// Read skews one reading of the real clock: the time of day realWall and
// the monotonic realMono.
func (c *Clock) Read(realWall time.Time, realMono time.Duration) (wall time.Time, mono time.Duration) {
	return realWall.Add(c.spec.Step), c.mono(realMono)
}

// mono is the skewed monotonic reading at the real reading realMono.
func (c *Clock) mono(realMono time.Duration) time.Duration {
	elapsed := max(0, realMono-c.realAt)
	return c.monoAt + time.Duration(float64(elapsed)*c.spec.rate())
}

// Set puts spec in force from the real monotonic reading realMono on.
// The monotonic reading goes on from where it is (a new rate changes its
// slope, not its value) and leaps ahead by however much spec raises the
// offset.
func (c *Clock) Set(spec Spec, realMono time.Duration) {
	m := c.mono(realMono)
	if spec.Offset > c.spec.Offset {
		m += spec.Offset - c.spec.Offset
	}
	c.spec, c.realAt, c.monoAt = spec, max(realMono, c.realAt), m
}
