package bookie

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"keeper/internal/metric"
	"keeper/internal/testhost"
)

// bookKeeperMetrics are the names and types BookKeeper's Prometheus
// provider exports for the bookie figures keeper measures: OpStatsLoggers
// as summaries, counters and gauges (docs/observability.md).
var bookKeeperMetrics = map[string]dto.MetricType{
	"bookkeeper_server_ADD_ENTRY_REQUEST":              dto.MetricType_SUMMARY,
	"bookkeeper_server_READ_ENTRY_REQUEST":             dto.MetricType_SUMMARY,
	"bookkeeper_server_READ_ENTRY_FENCE_WAIT":          dto.MetricType_SUMMARY,
	"bookkeeper_server_READ_ENTRY_LONG_POLL_WAIT":      dto.MetricType_SUMMARY,
	"bookkeeper_server_WRITE_LAC_REQUEST":              dto.MetricType_SUMMARY,
	"bookkeeper_server_READ_LAC_REQUEST":               dto.MetricType_SUMMARY,
	"bookkeeper_server_FORCE_LEDGER_REQUEST":           dto.MetricType_SUMMARY,
	"bookie_BOOKIE_ADD_ENTRY_BYTES":                    dto.MetricType_SUMMARY,
	"bookie_BOOKIE_READ_ENTRY_BYTES":                   dto.MetricType_SUMMARY,
	"bookie_WRITE_BYTES":                               dto.MetricType_COUNTER,
	"bookie_READ_BYTES":                                dto.MetricType_COUNTER,
	"bookie_SERVER_STATUS":                             dto.MetricType_GAUGE,
	"bookie_ledger_writable_dirs":                      dto.MetricType_GAUGE,
	"bookie_flush":                                     dto.MetricType_SUMMARY,
	"bookie_journal_JOURNAL_ADD_ENTRY":                 dto.MetricType_SUMMARY,
	"bookie_journal_JOURNAL_SYNC":                      dto.MetricType_SUMMARY,
	"bookie_journal_JOURNAL_QUEUE_LATENCY":             dto.MetricType_SUMMARY,
	"bookie_journal_JOURNAL_QUEUE_SIZE":                dto.MetricType_COUNTER,
	"bookie_journal_JOURNAL_FORCE_WRITE_BATCH_ENTRIES": dto.MetricType_SUMMARY,
	"bookie_journal_JOURNAL_FORCE_WRITE_BATCH_BYTES":   dto.MetricType_SUMMARY,
	"bookie_gc_ACTIVE_LEDGER_TOTAL":                    dto.MetricType_GAUGE,
	"bookie_gc_DELETED_LEDGER_TOTAL":                   dto.MetricType_COUNTER,
	"bookie_gc_MINOR_COMPACTION_TOTAL":                 dto.MetricType_COUNTER,
	"bookie_gc_MAJOR_COMPACTION_TOTAL":                 dto.MetricType_COUNTER,
	"bookie_gc_ACTIVE_ENTRY_LOG_TOTAL":                 dto.MetricType_GAUGE,
	"bookie_journal_JOURNAL_WRITE_BYTES":               dto.MetricType_COUNTER,
	"bookie_gc_GC_LEDGER_RUNTIME":                      dto.MetricType_SUMMARY,
	"bookie_gc_COMPACT_RUNTIME":                        dto.MetricType_SUMMARY,
}

// scrape parses a bookie's /metrics.
func scrape(t *testing.T, b *Bookie) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + b.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// TestMetricsNamesAndTypes scrapes a bookie that took adds and reads and
// checks BookKeeper's names, types, the summaries' quantiles and success
// labels, and that latencies are in milliseconds.
func TestMetricsNamesAndTypes(t *testing.T) {
	e := newEnv(t, false)
	e.tweak = func(c *Config) { c.MetricsAddr = "127.0.0.1:0" }
	b := e.start()
	c := dial(t, b)
	addEntries(t, c, 1, 0, 5)
	checkEntry(t, c, 1, 2)
	// A request's latency is recorded once its reply is on its way: the
	// last add's may land just after the client has it.
	var families map[string]*dto.MetricFamily
	deadline := time.Now().Add(testhost.Scale(10 * time.Second))
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for {
		families = scrape(t, b)
		if successCount(families["bookkeeper_server_ADD_ENTRY_REQUEST"]) >= 5 || time.Now().After(deadline) {
			break
		}
		<-poll.C
	}
	for name, want := range bookKeeperMetrics {
		f, ok := families[name]
		if !ok {
			t.Errorf("no %s", name)
			continue
		}
		if f.GetType() != want {
			t.Errorf("%s: %s, BookKeeper exports a %s", name, f.GetType(), want)
			continue
		}
		if want != dto.MetricType_SUMMARY {
			continue
		}
		labels := map[string]bool{}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "success" {
				t.Errorf("%s: labels %v, want success", name, m.GetLabel())
				continue
			}
			labels[m.GetLabel()[0].GetValue()] = true
			var qs []float64
			for _, q := range m.GetSummary().GetQuantile() {
				qs = append(qs, q.GetQuantile())
			}
			if len(qs) != 7 || qs[0] != 0.5 || qs[6] != 1 {
				t.Errorf("%s: quantiles %v, want BookKeeper's 0.5 to 1.0", name, qs)
			}
		}
		if !labels["true"] || !labels["false"] {
			t.Errorf("%s: success labels %v, want true and false", name, labels)
		}
	}
	// Five adds succeeded, in a plausible number of milliseconds (not µs,
	// not seconds): a loopback add with an fsync takes well under 10 s.
	for _, m := range families["bookkeeper_server_ADD_ENTRY_REQUEST"].GetMetric() {
		if m.GetLabel()[0].GetValue() != "true" {
			continue
		}
		s := m.GetSummary()
		maxMs := s.GetQuantile()[6].GetValue()
		if s.GetSampleCount() != 5 || math.IsNaN(maxMs) || maxMs <= 0 || maxMs > 10_000 || s.GetSampleSum() < maxMs {
			t.Errorf("add latency summary: %v", s)
		}
	}
	if got := families["bookie_BOOKIE_ADD_ENTRY_BYTES"].GetMetric(); len(got) != 2 {
		t.Fatalf("add bytes: %v", got)
	}
}

// successCount is the sample count of a summary's success="true" series.
func successCount(f *dto.MetricFamily) uint64 {
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == "true" {
			return m.GetSummary().GetSampleCount()
		}
	}
	return 0
}

// BenchmarkRecordLatency compares recording one latency into the OpStats
// the bookie now uses with the client_golang histogram it used before and
// the client_golang summary BookKeeper's type would suggest.
func BenchmarkRecordLatency(b *testing.B) {
	b.Run("opstats", func(b *testing.B) {
		o := new(metric.OpStats)
		b.RunParallel(func(pb *testing.PB) {
			v := int64(0)
			for pb.Next() {
				v = (v + 7919) % 100000
				o.Record(v, true)
			}
		})
	})
	b.Run("histogram", func(b *testing.B) {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h",
			Buckets: prometheus.ExponentialBuckets(20e-6, 2, 22)}, []string{"success"})
		b.RunParallel(func(pb *testing.PB) {
			v := int64(0)
			for pb.Next() {
				v = (v + 7919) % 100000
				h.WithLabelValues("true").Observe(float64(v) / 1e6)
			}
		})
	})
	b.Run("summary", func(b *testing.B) {
		s := prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "s",
			Objectives: map[float64]float64{0.5: 0.05, 0.75: 0.01, 0.95: 0.005, 0.99: 0.001, 0.999: 0.0001}},
			[]string{"success"})
		b.RunParallel(func(pb *testing.PB) {
			v := int64(0)
			for pb.Next() {
				v = (v + 7919) % 100000
				s.WithLabelValues("true").Observe(float64(v) / 1e3)
			}
		})
	})
}
