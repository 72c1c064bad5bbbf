package metric

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// OpStats records operations as BookKeeper's OpStatsLogger does: each
// outcome (success or failure) keeps its own distribution of a value, a
// latency or a size. Recording is a few atomic adds and no lock, cheap
// enough for every entry a bookie adds; quantiles are worked out when they
// are read, from log-linear buckets (within 1/16 of the true value; the
// maximum is exact).
type OpStats struct {
	ok, failed Distribution
}

// Record adds v to the success or the failure distribution.
func (o *OpStats) Record(v int64, success bool) {
	if success {
		o.ok.Add(v)
	} else {
		o.failed.Add(v)
	}
}

// Outcome returns the distribution of successes or of failures.
func (o *OpStats) Outcome(success bool) *Distribution {
	if success {
		return &o.ok
	}
	return &o.failed
}

// subBuckets is how many buckets each power of two is split into: values
// below subBuckets get a bucket each, larger ones share a bucket with
// values within 1/subBuckets of them.
const (
	subBucketBits = 4
	subBuckets    = 1 << subBucketBits
	// bucketCount covers every non-negative int64.
	bucketCount = subBuckets + (63-subBucketBits)*subBuckets
)

// Distribution is a count, a sum, a maximum and log-linear buckets of
// non-negative values; a negative value counts as 0. Safe for concurrent
// use.
type Distribution struct {
	count, sum, max atomic.Int64
	buckets         [bucketCount]atomic.Int64
}

// bucketOf returns v's bucket.
func bucketOf(v int64) int {
	if v < subBuckets {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - 1 // v is in [2^e, 2^(e+1))
	sub := int(v>>(e-subBucketBits)) & (subBuckets - 1)
	return subBuckets + (e-subBucketBits)*subBuckets + sub
}

// bucketMid returns the middle of bucket b's range.
func bucketMid(b int) float64 {
	if b < subBuckets {
		return float64(b)
	}
	e := (b-subBuckets)/subBuckets + subBucketBits
	sub := (b - subBuckets) % subBuckets
	width := math.Ldexp(1, e-subBucketBits)
	low := math.Ldexp(1, e) + float64(sub)*width
	return low + width/2
}

// Add records v.
func (d *Distribution) Add(v int64) {
	v = max(v, 0)
	d.count.Add(1)
	d.sum.Add(v)
	d.buckets[bucketOf(v)].Add(1)
	for {
		m := d.max.Load()
		if v <= m || d.max.CompareAndSwap(m, v) {
			return
		}
	}
}

// Count returns how many values were recorded.
func (d *Distribution) Count() int64 { return d.count.Load() }

// Sum returns the sum of the values.
func (d *Distribution) Sum() int64 { return d.sum.Load() }

// Quantiles returns the value at each quantile q (0 < q <= 1) of the
// values recorded so far, NaN for each when there are none. The value at 1
// is the maximum; the others are the middle of the bucket that holds them,
// capped at the maximum. Values recorded while it reads may be counted or
// not.
func (d *Distribution) Quantiles(qs ...float64) []float64 {
	out := make([]float64, len(qs))
	var counts [bucketCount]int64
	var total int64
	for i := range d.buckets {
		counts[i] = d.buckets[i].Load()
		total += counts[i]
	}
	maxV := float64(d.max.Load())
	for i, q := range qs {
		if total == 0 {
			out[i] = math.NaN()
			continue
		}
		if q >= 1 {
			out[i] = maxV
			continue
		}
		rank := int64(math.Ceil(q * float64(total)))
		var seen int64
		for b, c := range counts {
			seen += c
			if seen >= max(rank, 1) {
				out[i] = min(bucketMid(b), maxV)
				break
			}
		}
	}
	return out
}
