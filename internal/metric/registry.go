package metric

import (
	"fmt"
	"slices"
	"sync"
)

// Registry names a server's counters and summaries. Components get their
// metrics from it by name at construction (a second call with the same
// name returns the same metric), record into them as events happen, and
// the admin side reads them all by name. A name that no component asked
// for is simply absent: nothing is printed for what nobody measures.
type Registry struct {
	mu     sync.Mutex
	byName map[string]any
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byName: make(map[string]any)} }

// get returns the metric named name, making it with mk the first time. A
// name asked for as two different kinds is a programming error.
func get[T any](r *Registry, name string, mk func() *T) *T {
	if r == nil {
		return mk() // an unregistered metric: recorded, never shown
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.byName[name]; ok {
		t, ok := m.(*T)
		if !ok {
			panic(fmt.Sprintf("metric: %s registered as %T, asked for as %T", name, m, t))
		}
		return t
	}
	t := mk()
	r.byName[name] = t
	return t
}

// Counter returns the counter named name. A nil registry returns a
// counter nobody reads, so components work without one.
func (r *Registry) Counter(name string) *Counter {
	return get(r, name, func() *Counter { return new(Counter) })
}

// Summary returns the summary named name.
func (r *Registry) Summary(name string, detailed bool) *Summary {
	return get(r, name, func() *Summary { return NewSummary(detailed) })
}

// SummarySet returns the summary set named name.
func (r *Registry) SummarySet(name string, detailed bool) *SummarySet {
	return get(r, name, func() *SummarySet { return NewSummarySet(detailed) })
}

// CounterSet returns the counter set named name.
func (r *Registry) CounterSet(name string) *CounterSet {
	return get(r, name, func() *CounterSet { return NewCounterSet() })
}

// Lookup returns the metric named name: a *Counter, *Summary,
// *SummarySet or *CounterSet. A nil registry holds nothing.
func (r *Registry) Lookup(name string) (any, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.byName[name]
	return m, ok
}

// Names returns every registered name, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.byName))
	for n := range r.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Reset clears every metric, as ZooKeeper's srst clears ServerMetrics.
func (r *Registry) Reset() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.byName {
		switch m := m.(type) {
		case *Counter:
			m.Reset()
		case *Summary:
			m.Reset()
		case *SummarySet:
			m.Reset()
		case *CounterSet:
			m.Reset()
		}
	}
}
