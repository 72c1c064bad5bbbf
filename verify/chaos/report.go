package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"keeper/coordination/zkproto"
)

// maxViolationsPerCheck bounds the messages kept per check; the count
// goes on.
const maxViolationsPerCheck = 20

// Report is a run's outcome: what was done, what broke, and the figures.
// It is safe for concurrent use.
type Report struct {
	Scenario int

	mu          sync.Mutex
	ops         int
	faults      []string
	violations  map[string][]string
	counts      map[string]int
	lost        int
	unavailable time.Duration
	maxGap      time.Duration
	figures     map[string]string
}

// NewReport starts an empty report.
func NewReport(scenario int) *Report {
	return &Report{Scenario: scenario, violations: map[string][]string{}, counts: map[string]int{},
		figures: map[string]string{}}
}

// Violate records a broken guarantee under the check's name.
func (r *Report) Violate(check, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[check]++
	if len(r.violations[check]) < maxViolationsPerCheck {
		r.violations[check] = append(r.violations[check], fmt.Sprintf(format, args...))
	}
}

// Lost records an acknowledged write that is gone; it is a violation too.
func (r *Report) Lost(format string, args ...any) {
	r.mu.Lock()
	r.lost++
	r.mu.Unlock()
	r.Violate("durability", format, args...)
}

// Fault records one injected fault.
func (r *Report) Fault(desc string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, desc)
}

// Figure sets a named figure for the summary line.
func (r *Report) Figure(name, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.figures[name] = fmt.Sprintf(format, args...)
}

// Violations returns the number of violations.
func (r *Report) Violations() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.counts {
		n += c
	}
	return n
}

// Faults returns the faults injected, in order.
func (r *Report) Faults() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.faults)
}

// Details lists every kept violation message, by check.
func (r *Report) Details() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	checks := make([]string, 0, len(r.counts))
	for c := range r.counts {
		checks = append(checks, c)
	}
	sort.Strings(checks)
	var b strings.Builder
	for _, c := range checks {
		fmt.Fprintf(&b, "%s: %d violation(s)\n", c, r.counts[c])
		for _, m := range r.violations[c] {
			fmt.Fprintf(&b, "  - %s\n", m)
		}
	}
	return b.String()
}

// Line is the one-line summary:
//
//	chaos: scenario=N ops=… faults=… violations=0 lost=0 unavailable=…s …
func (r *Report) Line() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.counts {
		n += c
	}
	var b strings.Builder
	fmt.Fprintf(&b, "chaos: scenario=%d ops=%d faults=%d violations=%d lost=%d unavailable=%.1fs maxgap=%.1fs",
		r.Scenario, r.ops, len(r.faults), n, r.lost, r.unavailable.Seconds(), r.maxGap.Seconds())
	names := make([]string, 0, len(r.figures))
	for k := range r.figures {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, " %s=%s", k, r.figures[k])
	}
	return b.String()
}

// unavailableGap is how long no write may succeed before the time counts
// as unavailable.
const unavailableGap = time.Second

// Availability computes the op count, the unavailable time (the sum of the
// gaps of more than unavailableGap between successive successful writes,
// from the first op to the last) and the longest gap, and ops/s before,
// during and after the fault window [faultFrom, faultTo) (history ns).
func (r *Report) Availability(h *History, faultFrom, faultTo int64) {
	ops := h.Ops()
	var returns []int64
	var lat []time.Duration
	var before, during, after int
	first, last := int64(-1), int64(0)
	for _, o := range ops {
		if first < 0 || o.Call < first {
			first = o.Call
		}
		last = max(last, o.Call)
		if o.Unknown || o.Return < 0 {
			continue
		}
		switch {
		case o.Return < faultFrom:
			before++
		case o.Return < faultTo:
			during++
		default:
			after++
		}
		if o.IsWrite() && o.Err == zkproto.CodeOK {
			returns = append(returns, o.Return)
		}
		if o.Call >= faultFrom && o.Call < faultTo {
			lat = append(lat, time.Duration(o.Return-o.Call))
		}
	}
	slices.Sort(returns)
	var unavailable, maxGap time.Duration
	prev := first
	for _, t := range append(returns, last) {
		gap := time.Duration(t - prev)
		if gap > unavailableGap {
			unavailable += gap
		}
		maxGap = max(maxGap, gap)
		prev = max(prev, t)
	}
	r.mu.Lock()
	r.ops = len(ops)
	r.unavailable, r.maxGap = unavailable, maxGap
	r.mu.Unlock()
	rate := func(n int, from, to int64) string {
		if to <= from {
			return "-"
		}
		return fmt.Sprintf("%.0f", float64(n)/time.Duration(to-from).Seconds())
	}
	r.Figure("ops/s", "%s/%s/%s", rate(before, first, faultFrom), rate(during, faultFrom, faultTo), rate(after, faultTo, last))
	if len(lat) > 0 {
		slices.Sort(lat)
		r.Figure("p99", "%s", roundMs(lat[len(lat)*99/100]))
	}
}
