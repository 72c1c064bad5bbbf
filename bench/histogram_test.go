package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketBounds(t *testing.T) {
	values := []uint64{0, 1, 127, 128, 129, 255, 256, 257, 1000, 12345, 1 << 20, 1<<20 + 1, 999_999_999, 1<<36 - 1}
	for v := uint64(1); v < 1<<36; v = v*3/2 + 1 {
		values = append(values, v)
	}
	for _, v := range values {
		i := bucketIndex(v)
		lo, width := bucketBounds(i)
		if v < lo || v >= lo+width {
			t.Fatalf("value %d in bucket %d = [%d, %d)", v, i, lo, lo+width)
		}
		if v >= subBucketCount && float64(width)/float64(lo) > 1.0/subBucketCount {
			t.Fatalf("bucket %d = [%d, +%d) is wider than 1/%d of its values", i, lo, width, subBucketCount)
		}
		if i < 0 || i >= bucketCount {
			t.Fatalf("value %d: index %d outside [0, %d)", v, i, bucketCount)
		}
	}
	if i := bucketIndex(math.MaxUint64); i != bucketCount-1 {
		t.Fatalf("huge value: index %d, want the last bucket %d", i, bucketCount-1)
	}
	// Consecutive buckets tile the range without gaps or overlaps.
	for i := 1; i < bucketCount; i++ {
		lo, width := bucketBounds(i - 1)
		if next, _ := bucketBounds(i); next != lo+width {
			t.Fatalf("bucket %d ends at %d, bucket %d starts at %d", i-1, lo+width, i, next)
		}
	}
}

// TestHistogramQuantileAccuracy compares the histogram's quantiles with
// the exact ones of the recorded values, for several distributions.
func TestHistogramQuantileAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dists := []struct {
		name string
		draw func() time.Duration
	}{
		{"log-uniform 1ns..10s", func() time.Duration { return time.Duration(math.Exp(rng.Float64() * math.Log(1e10))) }},
		{"exponential mean 300us", func() time.Duration { return time.Duration(rng.ExpFloat64() * 300e3) }},
		{"bimodal 20us and 2ms", func() time.Duration {
			if rng.IntN(100) < 95 {
				return time.Duration(20e3 + rng.NormFloat64()*2e3)
			}
			return time.Duration(2e6 + rng.NormFloat64()*2e5)
		}},
		{"small exact values", func() time.Duration { return time.Duration(rng.IntN(128)) }},
	}
	for _, d := range dists {
		t.Run(d.name, func(t *testing.T) {
			h := NewHistogram()
			values := make([]time.Duration, 100_000)
			for i := range values {
				values[i] = max(d.draw(), 0)
				h.Record(values[i])
			}
			slices.Sort(values)
			for _, q := range []float64{0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1} {
				rank := max(int(math.Ceil(q*float64(len(values)))), 1)
				want := values[rank-1]
				got := h.Quantile(q)
				if diff := math.Abs(float64(got - want)); diff > 0.01*float64(want) && diff > 0.5 {
					t.Errorf("q=%v: got %v, exact %v (error %.3f%%)", q, got, want, 100*diff/float64(want))
				}
			}
			if h.Max() != values[len(values)-1] || h.Count() != uint64(len(values)) {
				t.Errorf("max %v count %d, want %v and %d", h.Max(), h.Count(), values[len(values)-1], len(values))
			}
		})
	}
}

func TestHistogramMerge(t *testing.T) {
	all, a, b := NewHistogram(), NewHistogram(), NewHistogram()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 10_000 {
		v := time.Duration(rng.Int64N(int64(time.Second)))
		all.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	a.Merge(b)
	for _, q := range []float64{0, 0.5, 0.99, 1} {
		if a.Quantile(q) != all.Quantile(q) {
			t.Errorf("q=%v: merged %v, direct %v", q, a.Quantile(q), all.Quantile(q))
		}
	}
	if a.Count() != all.Count() || a.Max() != all.Max() {
		t.Errorf("merged count %d max %v, direct %d %v", a.Count(), a.Max(), all.Count(), all.Max())
	}
	a.Reset()
	if a.Count() != 0 || a.Quantile(0.5) != 0 || a.Max() != 0 {
		t.Errorf("after Reset: count %d p50 %v max %v", a.Count(), a.Quantile(0.5), a.Max())
	}
}

func TestHistogramEdges(t *testing.T) {
	h := NewHistogram()
	if got := h.Quantile(0.99); got != 0 {
		t.Errorf("empty: p99 %v", got)
	}
	h.Record(-time.Second) // a clock step backwards counts as zero
	h.Record(time.Hour)    // beyond the last octave: clamped, but Max is exact
	if h.Quantile(0) != 0 || h.Quantile(1) != time.Hour || h.Max() != time.Hour {
		t.Errorf("min %v max quantile %v Max %v", h.Quantile(0), h.Quantile(1), h.Max())
	}
}

func TestHistogramRecordDoesNotAllocate(t *testing.T) {
	h := NewHistogram()
	v := time.Duration(0)
	if n := testing.AllocsPerRun(1000, func() { v += 7919; h.Record(v) }); n != 0 {
		t.Fatalf("Record allocates %v times per call", n)
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	h := NewHistogram()
	v := time.Duration(0)
	for b.Loop() {
		v += 7919
		h.Record(v)
	}
}
