package metric

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestBucketsCoverEveryValue(t *testing.T) {
	prev := -1
	for _, v := range []int64{0, 1, 15, 16, 17, 31, 32, 33, 1000, 1 << 20, 1<<40 + 12345, math.MaxInt64} {
		b := bucketOf(v)
		if b < prev || b >= bucketCount {
			t.Fatalf("value %d in bucket %d (previous %d, %d buckets)", v, b, prev, bucketCount)
		}
		prev = b
		if mid := bucketMid(b); math.Abs(mid-float64(v)) > float64(v)/subBuckets+0.5 {
			t.Errorf("value %d: bucket %d's middle %v is too far", v, b, mid)
		}
	}
}

func TestQuantiles(t *testing.T) {
	tests := []struct {
		name   string
		values []int64
		q      []float64
		want   []float64 // within 1/16
	}{
		{"empty", nil, []float64{0.5, 1}, []float64{math.NaN(), math.NaN()}},
		{"one", []int64{700}, []float64{0.5, 0.99, 1}, []float64{700, 700, 700}},
		{"small exact", []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, []float64{0.5, 0.9, 1}, []float64{5, 9, 10}},
		{"negative as zero", []int64{-5}, []float64{1}, []float64{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Distribution
			for _, v := range tt.values {
				d.Add(v)
			}
			got := d.Quantiles(tt.q...)
			for i := range got {
				if math.IsNaN(tt.want[i]) != math.IsNaN(got[i]) || math.Abs(got[i]-tt.want[i]) > tt.want[i]/16 {
					t.Errorf("q%v = %v, want %v", tt.q[i], got[i], tt.want[i])
				}
			}
		})
	}
}

// Quantiles stay within 1/16 of the exact ones over a wide spread of
// values.
func TestQuantilesAgainstSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var d Distribution
	var all []int64
	for range 100000 {
		v := int64(math.Exp(rng.Float64() * 20)) // 1 to 5e8, log-uniform
		all = append(all, v)
		d.Add(v)
	}
	slices.Sort(all)
	qs := []float64{0.5, 0.75, 0.95, 0.99, 0.999, 0.9999, 1}
	got := d.Quantiles(qs...)
	for i, q := range qs {
		exact := float64(all[int(math.Ceil(q*float64(len(all))))-1])
		if math.Abs(got[i]-exact) > exact/16+1 {
			t.Errorf("q%v = %v, exact %v", q, got[i], exact)
		}
	}
	if d.Count() != int64(len(all)) {
		t.Errorf("count %d", d.Count())
	}
}

func TestOpStatsConcurrent(t *testing.T) {
	var o OpStats
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				o.Record(int64(i), g%2 == 0)
			}
		}()
	}
	wg.Wait()
	for _, ok := range []bool{true, false} {
		d := o.Outcome(ok)
		if d.Count() != 2000 || d.Sum() != 2*999*1000/2 || d.Quantiles(1)[0] != 999 {
			t.Errorf("success=%v: count %d sum %d max %v", ok, d.Count(), d.Sum(), d.Quantiles(1)[0])
		}
	}
}
