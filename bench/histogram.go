package bench

import (
	"math"
	"math/bits"
	"time"
)

// The histogram is log-linear, as in HdrHistogram: values below
// 2^subBucketBits nanoseconds get a bucket each, and every power of two
// above that is split into 2^subBucketBits equal buckets. A bucket in the
// octave [2^e, 2^(e+1)) is 2^(e-subBucketBits) wide, so its width is at
// most 1/128 of any value in it; Quantile reports the bucket's midpoint,
// within 1/256 (0.4%) of every value the bucket holds.
const (
	subBucketBits  = 7
	subBucketCount = 1 << subBucketBits
	// maxExponent bounds the largest octave, [2^36, 2^37) ns (69 to 137
	// s), far beyond any latency worth measuring; larger values land in
	// the last bucket, whose quantile is reported as the exact maximum.
	maxExponent = 36
	bucketCount = (maxExponent - subBucketBits + 2) * subBucketCount
)

// Histogram records durations in log-linear buckets with a relative error
// below 1%. Record does not allocate. The zero value is not ready: use
// NewHistogram. It is not safe for concurrent use; give each goroutine its
// own and Merge them.
type Histogram struct {
	counts []uint64 // indexed by bucketIndex; bucketCount entries
	total  uint64
	min    uint64 // ns; math.MaxUint64 while empty
	max    uint64 // ns
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{counts: make([]uint64, bucketCount), min: math.MaxUint64}
}

// bucketIndex returns the bucket of v nanoseconds.
func bucketIndex(v uint64) int {
	if v < subBucketCount {
		return int(v)
	}
	e := bits.Len64(v) - 1 // v is in [2^e, 2^(e+1))
	if e > maxExponent {
		return bucketCount - 1
	}
	shift := e - subBucketBits
	mantissa := v >> shift // in [2^subBucketBits, 2^(subBucketBits+1))
	return (shift+1)*subBucketCount + int(mantissa-subBucketCount)
}

// bucketBounds returns the smallest value of bucket i and its width.
func bucketBounds(i int) (lo, width uint64) {
	if i < subBucketCount {
		return uint64(i), 1
	}
	shift := i/subBucketCount - 1
	mantissa := uint64(i%subBucketCount + subBucketCount)
	return mantissa << shift, 1 << shift
}

// Record adds one duration; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[bucketIndex(v)]++
	h.total++
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.total }

// Max returns the largest recorded value exactly, 0 if none.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Merge adds every value recorded in o to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Reset empties the histogram.
func (h *Histogram) Reset() {
	clear(h.counts)
	h.total, h.min, h.max = 0, math.MaxUint64, 0
}

// Quantile returns the value at quantile q in [0, 1]: the value below
// which a fraction q of the recorded values lie (nearest rank), as the
// midpoint of its bucket clamped to the recorded minimum and maximum. It
// returns 0 for an empty histogram.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := max(uint64(math.Ceil(q*float64(h.total))), 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			if i == bucketCount-1 {
				return time.Duration(h.max) // values past the last octave land here
			}
			lo, width := bucketBounds(i)
			mid := lo + (width-1)/2
			return time.Duration(min(max(mid, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}
