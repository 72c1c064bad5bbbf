package metric

import (
	"sync"
	"testing"
)

func TestSummaryFigures(t *testing.T) {
	tests := []struct {
		name               string
		detailed           bool
		values             []int64
		count, sum, lo, hi int64
		avg                float64
		p50, p95           float64
	}{
		{name: "empty", detailed: true},
		{name: "one", detailed: true, values: []int64{7}, count: 1, sum: 7, lo: 7, hi: 7, avg: 7, p50: 7, p95: 7},
		// Positions q·(n+1): p50 of 4 values is 2.5 → halfway between the
		// 2nd and 3rd; p95 is 4.75 → past the last.
		{name: "four", detailed: true, values: []int64{4, 1, 3, 2}, count: 4, sum: 10, lo: 1, hi: 4, avg: 2.5, p50: 2.5, p95: 4},
		{name: "basic keeps percentiles too", values: []int64{5, 9}, count: 2, sum: 14, lo: 5, hi: 9, avg: 7, p50: 7, p95: 9},
		{name: "negative minimum", values: []int64{-3, 2}, count: 2, sum: -1, lo: -3, hi: 2, avg: -0.5, p50: -0.5, p95: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSummary(tt.detailed)
			for _, v := range tt.values {
				s.Add(v)
			}
			snap := s.Snapshot()
			if snap.Count != tt.count || snap.Sum != tt.sum || snap.Min != tt.lo || snap.Max != tt.hi {
				t.Fatalf("count/sum/min/max = %d/%d/%d/%d, want %d/%d/%d/%d",
					snap.Count, snap.Sum, snap.Min, snap.Max, tt.count, tt.sum, tt.lo, tt.hi)
			}
			if snap.Avg() != tt.avg {
				t.Errorf("avg = %v, want %v", snap.Avg(), tt.avg)
			}
			if got := snap.Quantile(0.5); got != tt.p50 {
				t.Errorf("p50 = %v, want %v", got, tt.p50)
			}
			if got := snap.Quantile(0.95); got != tt.p95 {
				t.Errorf("p95 = %v, want %v", got, tt.p95)
			}
		})
	}
}

func TestSummaryWindowKeepsRecentValues(t *testing.T) {
	s := NewSummary(true)
	for range WindowSize {
		s.Add(1000)
	}
	for range WindowSize {
		s.Add(1)
	}
	snap := s.Snapshot()
	if got := snap.Quantile(0.99); got != 1 {
		t.Errorf("p99 after the window turned over = %v, want 1", got)
	}
	if snap.Max != 1000 || snap.Count != 2*WindowSize {
		t.Errorf("max %d count %d: the totals must cover every value", snap.Max, snap.Count)
	}
	s.Reset()
	if snap := s.Snapshot(); snap.Count != 0 || snap.Quantile(0.5) != 0 {
		t.Errorf("after reset: %+v", snap)
	}
}

func TestSetsAndBuffer(t *testing.T) {
	ss := NewSummarySet(false)
	ss.Add("b", 4)
	ss.Add("a", 1)
	ss.Add("b", 6)
	got := ss.Snapshot()
	if len(got) != 2 || got[0].Key != "a" || got[1].Key != "b" || got[1].Snapshot.Sum != 10 || got[1].Snapshot.Count != 2 {
		t.Fatalf("summary set = %+v", got)
	}
	cs := NewCounterSet()
	cs.Add("x", 2)
	cs.Add("x", 3)
	if got := cs.Snapshot(); len(got) != 1 || got[0].Count != 5 {
		t.Fatalf("counter set = %+v", got)
	}
	var b Buffer
	if l, lo, hi := b.Get(); l != -1 || lo != -1 || hi != -1 {
		t.Fatalf("empty buffer = %d/%d/%d, want -1/-1/-1", l, lo, hi)
	}
	for _, n := range []int64{16, 93, 40} {
		b.Add(n)
	}
	if l, lo, hi := b.Get(); l != 40 || lo != 16 || hi != 93 {
		t.Fatalf("buffer = %d/%d/%d, want 40/16/93", l, lo, hi)
	}
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	c := r.Counter("commit_count")
	if r.Counter("commit_count") != c {
		t.Fatal("a second Counter call must return the same counter")
	}
	c.Add(3)
	r.Summary("fsynctime", false).Add(9)
	if got := r.Names(); len(got) != 2 || got[0] != "commit_count" || got[1] != "fsynctime" {
		t.Fatalf("names = %v", got)
	}
	r.Reset()
	if c.Load() != 0 {
		t.Fatalf("counter after Reset = %d", c.Load())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("asking for a counter's name as a summary must panic")
		}
	}()
	r.Summary("commit_count", false)
}

func TestConcurrentUse(t *testing.T) {
	s := NewSummary(true)
	var c Counter
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				s.Add(int64(g*1000 + i))
				c.Inc()
				_ = s.Snapshot().Quantile(0.5)
			}
		}()
	}
	wg.Wait()
	if s.Snapshot().Count != 4000 || c.Load() != 4000 {
		t.Fatalf("count %d, counter %d, want 4000", s.Snapshot().Count, c.Load())
	}
}
