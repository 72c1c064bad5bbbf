// Package metric holds the counters and summaries keeper's servers keep
// about themselves, with Apache ZooKeeper's semantics (docs/observability.md):
// a Summary is ZooKeeper's AvgMinMaxCounter (count, sum, min, max, average),
// and a detailed one also answers percentiles, as AvgMinMaxPercentileCounter
// does. A Registry names them, so that the admin side can print and export
// what the drivers and the core record.
//
// Everything here is safe for concurrent use: the core records on its loop,
// the persister on its own goroutine, and scrapes read from others. Values
// are fed in by the caller (durations already measured, in ms): the package
// reads no clock.
package metric

import (
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// Counter is a count that only grows, until Reset.
type Counter struct{ v atomic.Int64 }

// Add adds n.
func (c *Counter) Add(n int64) { c.v.Add(n) }

// Inc adds 1.
func (c *Counter) Inc() { c.v.Add(1) }

// Load returns the count.
func (c *Counter) Load() int64 { return c.v.Load() }

// Reset sets the count to 0.
func (c *Counter) Reset() { c.v.Store(0) }

// WindowSize is how many recent values a Summary keeps for its
// percentiles. ZooKeeper keeps a uniform random sample of 4096 values since
// the last reset; keeper keeps the most recent 4096, so that the figures
// are deterministic and follow the present load.
const WindowSize = 4096

// Summary accumulates values: count, sum, min and max since the last
// reset, and the most recent WindowSize values for percentiles. Detailed
// only marks the summaries whose percentiles mntr prints (ZooKeeper's
// DetailLevel.ADVANCED); Prometheus exports a median for every summary, as
// ZooKeeper's provider does.
type Summary struct {
	detailed bool
	mu       sync.Mutex
	count    int64
	sum      int64
	min, max int64
	window   []int64 // ring of the last values
	next     int     // where the next value goes in window
}

// NewSummary returns an empty summary; detailed marks it as one whose
// percentiles mntr prints (ZooKeeper's DetailLevel.ADVANCED).
func NewSummary(detailed bool) *Summary { return &Summary{detailed: detailed} }

// Detailed reports whether mntr prints the summary's percentiles.
func (s *Summary) Detailed() bool { return s.detailed }

// Add records one value.
func (s *Summary) Add(v int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count == 0 || v < s.min {
		s.min = v
	}
	if s.count == 0 || v > s.max {
		s.max = v
	}
	s.count++
	s.sum += v
	if len(s.window) < WindowSize {
		s.window = append(s.window, v)
		return
	}
	s.window[s.next] = v
	s.next = (s.next + 1) % WindowSize
}

// Reset forgets every value.
func (s *Summary) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count, s.sum, s.min, s.max, s.next = 0, 0, 0, 0, 0
	s.window = nil
}

// Snapshot returns the summary's figures now.
func (s *Summary) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := Snapshot{Count: s.count, Sum: s.sum, Min: s.min, Max: s.max, Detailed: s.detailed}
	snap.sorted = slices.Clone(s.window)
	slices.Sort(snap.sorted)
	return snap
}

// Snapshot is a summary's figures at one moment. Min and Max are 0 while
// Count is 0, as ZooKeeper prints them.
type Snapshot struct {
	Count, Sum, Min, Max int64
	Detailed             bool
	sorted               []int64
}

// Avg returns Sum/Count, 0 for no values.
func (s Snapshot) Avg() float64 {
	if s.Count == 0 {
		return 0
	}
	return float64(s.Sum) / float64(s.Count)
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of the kept values, 0 if
// none, interpolating between neighbours as ZooKeeper's reservoir snapshot
// does: the position is q·(n+1), counted from 1.
func (s Snapshot) Quantile(q float64) float64 {
	n := len(s.sorted)
	if n == 0 {
		return 0
	}
	pos := q * float64(n+1)
	switch {
	case pos < 1:
		return float64(s.sorted[0])
	case pos >= float64(n):
		return float64(s.sorted[n-1])
	}
	lower := float64(s.sorted[int(pos)-1])
	upper := float64(s.sorted[int(pos)])
	return lower + (pos-math.Floor(pos))*(upper-lower)
}

// SummarySet is a Summary per key (ZooKeeper's summary sets: per
// namespace, per learner). Keys appear when first added to.
type SummarySet struct {
	detailed bool
	mu       sync.Mutex
	byKey    map[string]*Summary
}

// NewSummarySet returns an empty set of summaries.
func NewSummarySet(detailed bool) *SummarySet {
	return &SummarySet{detailed: detailed, byKey: make(map[string]*Summary)}
}

// Detailed reports whether mntr prints the set's percentiles.
func (s *SummarySet) Detailed() bool { return s.detailed }

// Add records v under key.
func (s *SummarySet) Add(key string, v int64) {
	s.mu.Lock()
	sum, ok := s.byKey[key]
	if !ok {
		sum = NewSummary(s.detailed)
		s.byKey[key] = sum
	}
	s.mu.Unlock()
	sum.Add(v)
}

// Reset forgets every key.
func (s *SummarySet) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.byKey)
}

// Snapshot returns each key's figures, keys sorted.
func (s *SummarySet) Snapshot() []Keyed {
	s.mu.Lock()
	out := make([]Keyed, 0, len(s.byKey))
	for k, sum := range s.byKey {
		out = append(out, Keyed{Key: k, summary: sum})
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	for i := range out {
		out[i].Snapshot = out[i].summary.Snapshot()
		out[i].summary = nil
	}
	return out
}

// Keyed is one key's figures in a SummarySet or CounterSet.
type Keyed struct {
	Key      string
	Snapshot Snapshot // a SummarySet's
	Count    int64    // a CounterSet's
	summary  *Summary
}

// CounterSet is a Counter per key.
type CounterSet struct {
	mu    sync.Mutex
	byKey map[string]int64
}

// NewCounterSet returns an empty set of counters.
func NewCounterSet() *CounterSet { return &CounterSet{byKey: make(map[string]int64)} }

// Add adds n to key's count.
func (s *CounterSet) Add(key string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byKey[key] += n
}

// Reset forgets every key.
func (s *CounterSet) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.byKey)
}

// Snapshot returns each key's count, keys sorted.
func (s *CounterSet) Snapshot() []Keyed {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Keyed, 0, len(s.byKey))
	for k, n := range s.byKey {
		out = append(out, Keyed{Key: k, Count: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Buffer tracks the last, smallest and largest of a series of sizes, -1
// for each before the first (ZooKeeper's BufferStats).
type Buffer struct {
	mu             sync.Mutex
	last, min, max int64
	seen           bool
}

// Add records one size.
func (b *Buffer) Add(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = n
	if !b.seen || n < b.min {
		b.min = n
	}
	if !b.seen || n > b.max {
		b.max = n
	}
	b.seen = true
}

// Get returns the last, smallest and largest size, -1 each before any.
func (b *Buffer) Get() (last, minimum, maximum int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.seen {
		return -1, -1, -1
	}
	return b.last, b.min, b.max
}

// Reset forgets every size.
func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seen = false
}
