package bookie

import (
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"keeper/internal/testhost"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
)

// figure reads one number from scraped families. key is a gauge's or a
// counter's name; "name:true" or "name:false" is a summary's count for
// that outcome, "name:true:sum" its sum. A missing metric fails the test.
func figure(t *testing.T, families map[string]*dto.MetricFamily, key string) float64 {
	t.Helper()
	parts := strings.Split(key, ":")
	f, ok := families[parts[0]]
	if !ok {
		t.Fatalf("no metric %s", parts[0])
	}
	for _, m := range f.GetMetric() {
		switch {
		case len(parts) == 1 && m.GetGauge() != nil:
			return m.GetGauge().GetValue()
		case len(parts) == 1 && m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		case len(parts) > 1 && m.GetSummary() != nil && m.GetLabel()[0].GetValue() == parts[1]:
			if len(parts) == 3 {
				return m.GetSummary().GetSampleSum()
			}
			return float64(m.GetSummary().GetSampleCount())
		}
	}
	t.Fatalf("no sample for %s", key)
	return 0
}

// entryBytes is the stored size of entries [from, to] of addEntries.
func entryBytes(ledgerID, from, to int64) float64 {
	var n int
	for e := from; e <= to; e++ {
		n += len(body(ledgerID, e, 100))
	}
	return float64(n)
}

// TestStorageMetrics does one storage operation per step and checks that
// exactly the ledger storage figures it should move moved, by how much,
// and what the gauges read after it (docs/observability.md, BookKeeper's
// DbLedgerStorage names).
func TestStorageMetrics(t *testing.T) {
	e := newEnv(t, false)
	e.tweak = func(c *Config) { c.MetricsAddr = "127.0.0.1:0" }
	b := e.start()
	c := dial(t, b)
	read := func(entryID int64, want bkproto.StatusCode) func(t *testing.T) {
		return func(t *testing.T) {
			_, err := c.Read(ctx(t), 1, entryID)
			wantStatus(t, fmt.Sprintf("read 1/%d", entryID), err, want)
		}
	}
	steps := []struct {
		name  string
		do    func(t *testing.T)
		moved map[string]float64 // change of each watched figure; unlisted ones stay put
		now   map[string]float64 // gauges after the step
	}{{
		name:  "add five entries",
		do:    func(t *testing.T) { addEntries(t, c, 1, 0, 5) },
		moved: map[string]float64{"bookie_add_entry:true": 5},
		now: map[string]float64{"bookie_write_cache_count": 5, "bookie_write_cache_size": entryBytes(1, 0, 4),
			"bookie_ledgers_count": 1, "bookie_read_cache_count": 0},
	}, {
		name:  "read from the write cache",
		do:    read(2, bkproto.StatusCode_EOK),
		moved: map[string]float64{"bookie_read_entry:true": 1, "bookie_write_cache_hits": 1},
	}, {
		name: "read an entry not stored",
		do:   read(99, bkproto.StatusCode_ENOENTRY),
		moved: map[string]float64{"bookie_read_entry:false": 1, "bookie_write_cache_misses": 1,
			"bookie_read_cache_misses": 1, "bookie_lookup_entry_location:true": 1},
	}, {
		name: "flush",
		do: func(t *testing.T) {
			if err := b.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		},
		moved: map[string]float64{"bookie_flush:true": 1, "bookie_flush_size:true": 1,
			"bookie_flush_size:true:sum": entryBytes(1, 0, 4), "bookie_flush_entrylog:true": 1,
			"bookie_flush_locations_index:true": 1},
		now: map[string]float64{"bookie_write_cache_count": 0, "bookie_write_cache_size": 0},
	}, {
		name: "flush with nothing to flush",
		do: func(t *testing.T) {
			if err := b.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		},
	}, {
		name: "read from an entry log, reading ahead",
		do:   read(0, bkproto.StatusCode_EOK),
		moved: map[string]float64{"bookie_read_entry:true": 1, "bookie_write_cache_misses": 1,
			"bookie_read_cache_misses": 1, "bookie_lookup_entry_location:true": 1, "bookie_readahead_batch_count:true": 1,
			"bookie_readahead_batch_count:true:sum": 4, "bookie_readahead_batch_size:true": 1,
			"bookie_readahead_batch_size:true:sum": entryBytes(1, 1, 4)},
		now: map[string]float64{"bookie_read_cache_count": 4, "bookie_read_cache_size": entryBytes(1, 1, 4)},
	}, {
		name: "read from the read cache",
		do:   read(3, bkproto.StatusCode_EOK),
		moved: map[string]float64{"bookie_read_entry:true": 1, "bookie_write_cache_misses": 1,
			"bookie_read_cache_hits": 1},
	}, {
		name: "read the last entry from an entry log",
		do:   read(bkproto.LastAddConfirmed, bkproto.StatusCode_EOK),
		moved: map[string]float64{"bookie_read_entry:true": 1, "bookie_write_cache_misses": 1,
			"bookie_get_last_entry_in_ledger:true": 1},
	}, {
		name: "read the last entry from the write cache",
		do: func(t *testing.T) {
			addEntries(t, c, 1, 5, 6)
			read(bkproto.LastAddConfirmed, bkproto.StatusCode_EOK)(t)
		},
		moved: map[string]float64{"bookie_add_entry:true": 1, "bookie_read_entry:true": 1,
			"bookie_write_cache_hits": 1, "bookie_get_last_entry_in_ledger:true": 1},
		now: map[string]float64{"bookie_write_cache_count": 1, "bookie_write_cache_size": entryBytes(1, 5, 5)},
	}}
	watched := map[string]bool{}
	for _, s := range steps {
		for k := range s.moved {
			watched[k] = true
		}
	}
	take := func() map[string]float64 {
		families := scrape(t, b)
		out := map[string]float64{}
		for k := range watched {
			out[k] = figure(t, families, k)
		}
		for _, s := range steps {
			for k := range s.now {
				out[k] = figure(t, families, k)
			}
		}
		return out
	}
	before := take()
	if got := figure(t, scrape(t, b), "bookie_readahead_max_batch_size"); got != 100 {
		t.Errorf("bookie_readahead_max_batch_size = %v, want 100", got)
	}
	for _, s := range steps {
		s.do(t)
		after := take()
		for k := range watched {
			if got, want := after[k]-before[k], s.moved[k]; got != want {
				t.Errorf("%s: %s moved by %v, want %v", s.name, k, got, want)
			}
		}
		for k, want := range s.now {
			if after[k] != want {
				t.Errorf("%s: %s = %v, want %v", s.name, k, after[k], want)
			}
		}
		before = after
	}
}

// TestThrottledWriteMetrics fills a small write cache while the
// checkpoint is held: an add that waits and gets in counts as throttled
// and a success, one that waits ThrottleWait in vain as throttled,
// rejected and a failure.
func TestThrottledWriteMetrics(t *testing.T) {
	for _, tt := range []struct {
		name   string
		wait   time.Duration
		refuse bool
		moved  map[string]float64
	}{{
		name: "rejected", wait: 50 * time.Millisecond, refuse: true,
		moved: map[string]float64{"bookie_throttled_write_requests": 1, "bookie_rejected_write_requests": 1,
			"bookie_throttled_write:false": 1, "bookie_throttled_write:true": 0,
			"bookie_add_entry:false": 1, "bookie_add_entry:true": 0, "bookkeeper_server_ADD_ENTRY_REJECTED": 1},
	}, {
		name: "let in", wait: testhost.Scale(time.Minute),
		moved: map[string]float64{"bookie_throttled_write_requests": 1, "bookie_rejected_write_requests": 0,
			"bookie_throttled_write:false": 0, "bookie_throttled_write:true": 1,
			"bookie_add_entry:false": 0, "bookie_add_entry:true": 1, "bookkeeper_server_ADD_ENTRY_REJECTED": 0},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, false)
			e.tweak = func(c *Config) {
				c.MetricsAddr = "127.0.0.1:0"
				c.WriteCacheBytes = 1 << 10 // halves of 512 bytes: two 300-byte entries fill both
				c.ThrottleWait = tt.wait
			}
			b := e.start()
			c := dial(t, b)
			if got := figure(t, scrape(t, b), "bookie_write_cache_max_size"); got != 1<<10 {
				t.Errorf("bookie_write_cache_max_size = %v, want 1024", got)
			}
			b.ckptMu.Lock()
			locked := true
			defer func() {
				if locked {
					b.ckptMu.Unlock()
				}
			}()
			for entry := int64(0); entry < 2; entry++ {
				if err := c.Add(ctx(t), 4, entry, testKey, body(4, entry, 300), false); err != nil {
					t.Fatal(err)
				}
			}
			before := scrape(t, b)
			res := c.Go(bookierpc.AddRequest(4, 2, testKey, body(4, 2, 300), false))
			if !tt.refuse {
				eventually(t, "the add throttled", func() bool {
					return figure(t, scrape(t, b), "bookie_throttled_write_requests") == 1
				})
				b.ckptMu.Unlock()
				locked = false
			}
			var r bookierpc.Result
			select {
			case r = <-res:
			case <-ctx(t).Done():
				t.Fatal("no answer to the throttled add")
			}
			want := bkproto.StatusCode_EOK
			if tt.refuse {
				want = bkproto.StatusCode_ETOOMANYREQUESTS
			}
			wantStatus(t, "throttled add", bookierpc.StatusErr(r.Resp, r.Err), want)
			// The bookie records an add after it answers it: wait for every
			// figure that must move, then check them all.
			var after map[string]*dto.MetricFamily
			eventually(t, "the add's figures", func() bool {
				after = scrape(t, b)
				for k, want := range tt.moved {
					if want != 0 && figure(t, after, k)-figure(t, before, k) != want {
						return false
					}
				}
				return true
			})
			for k, want := range tt.moved {
				if got := figure(t, after, k) - figure(t, before, k); got != want {
					t.Errorf("%s moved by %v, want %v", k, got, want)
				}
			}
		})
	}
}
