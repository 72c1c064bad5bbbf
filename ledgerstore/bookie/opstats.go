package bookie

import (
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"keeper/internal/metric"
)

// opStatsQuantiles are the quantiles BookKeeper's Prometheus provider
// exports for every OpStatsLogger.
var opStatsQuantiles = []float64{0.5, 0.75, 0.95, 0.99, 0.999, 0.9999, 1.0}

// OpStatsCollector exports a metric.OpStats as BookKeeper's Prometheus
// provider exports an OpStatsLogger: a summary with the quantiles above,
// _count and _sum, once labelled success="false" and once success="true"
// (NaN quantiles while an outcome has no events). Values are multiplied by
// scale on the way out (1e-3 turns µs into BookKeeper's ms).
type OpStatsCollector struct {
	desc  *prometheus.Desc
	stats *metric.OpStats
	scale float64
}

// NewOpStatsCollector returns a collector of stats under name.
func NewOpStatsCollector(name, help string, stats *metric.OpStats, scale float64) *OpStatsCollector {
	return &OpStatsCollector{
		desc:  prometheus.NewDesc(name, help, []string{"success"}, nil),
		stats: stats,
		scale: scale,
	}
}

// Describe implements prometheus.Collector.
func (c *OpStatsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *OpStatsCollector) Collect(ch chan<- prometheus.Metric) {
	collectOpStats(ch, c.desc, c.stats, c.scale)
}

// collectOpStats sends stats's two summaries for desc, whose last label
// is success and whose labels before it take labels.
func collectOpStats(ch chan<- prometheus.Metric, desc *prometheus.Desc, stats *metric.OpStats, scale float64,
	labels ...string) {
	for _, ok := range []bool{false, true} {
		d := stats.Outcome(ok)
		count, sum := d.Count(), d.Sum()
		values := d.Quantiles(opStatsQuantiles...)
		quantiles := make(map[float64]float64, len(values))
		for i, q := range opStatsQuantiles {
			quantiles[q] = values[i] * scale
		}
		label := "false"
		if ok {
			label = "true"
		}
		ch <- prometheus.MustNewConstSummary(desc, uint64(count), float64(sum)*scale, quantiles,
			append(labels[:len(labels):len(labels)], label)...)
	}
}

// counterCollector exports a metric.Counter as a Prometheus counter
// under its own name, as BookKeeper's provider writes a counter.
type counterCollector struct {
	desc *prometheus.Desc
	c    *metric.Counter
}

func (c counterCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c counterCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(c.c.Load()))
}

// Figures are what MetricsHandler exports, by their BookKeeper names.
type Figures struct {
	// Latencies are recorded in µs and exported as summaries in ms.
	Latencies map[string]*metric.OpStats
	// Values are recorded and exported as they are (counts, sizes).
	Values map[string]*metric.OpStats
	// Counters are exported as counters, Gauges as gauges, read at each
	// scrape.
	Counters map[string]*metric.Counter
	Gauges   map[string]*atomic.Int64
	// CountersByBookie are counters labelled bookie, as BookKeeper's
	// provider exports a counter of a scope labelled by bookie; each
	// function returns the counts by bookie at scrape time (a name has no
	// series until a bookie has a count).
	CountersByBookie map[string]func() map[string]int64
	// LatenciesByBookie are latencies (µs, exported in ms) labelled
	// bookie, as Latencies are exported otherwise; each function returns
	// the figures by bookie at scrape time.
	LatenciesByBookie map[string]func() map[string]*metric.OpStats
}

// MetricsHandler serves, at any path, f in BookKeeper's Prometheus format.
// It is how a process that is not a bookie (a ledger client's, with
// ledgerclient.Metrics) exports BookKeeper's client metrics.
func MetricsHandler(f Figures) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	for name, o := range f.Latencies {
		if err := reg.Register(NewOpStatsCollector(name, name, o, 1e-3)); err != nil {
			return nil, fmt.Errorf("bookie: metric %s: %w", name, err)
		}
	}
	for name, o := range f.Values {
		if err := reg.Register(NewOpStatsCollector(name, name, o, 1)); err != nil {
			return nil, fmt.Errorf("bookie: metric %s: %w", name, err)
		}
	}
	for name, c := range f.Counters {
		if err := reg.Register(counterCollector{prometheus.NewDesc(name, name, nil, nil), c}); err != nil {
			return nil, fmt.Errorf("bookie: metric %s: %w", name, err)
		}
	}
	for name, g := range f.Gauges {
		if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: name},
			func() float64 { return float64(g.Load()) })); err != nil {
			return nil, fmt.Errorf("bookie: metric %s: %w", name, err)
		}
	}
	for name, by := range f.CountersByBookie {
		c := bookieCounters{prometheus.NewDesc(name, name, []string{"bookie"}, nil), by}
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("bookie: metric %s: %w", name, err)
		}
	}
	for name, by := range f.LatenciesByBookie {
		c := bookieOpStats{prometheus.NewDesc(name, name, []string{"bookie", "success"}, nil), by}
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("bookie: metric %s: %w", name, err)
		}
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}

// bookieCounters exports counters labelled bookie.
type bookieCounters struct {
	desc *prometheus.Desc
	by   func() map[string]int64
}

func (c bookieCounters) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c bookieCounters) Collect(ch chan<- prometheus.Metric) {
	for b, n := range c.by() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), b)
	}
}

// bookieOpStats exports latencies labelled bookie, each as
// OpStatsCollector exports one (µs in, ms out).
type bookieOpStats struct {
	desc *prometheus.Desc
	by   func() map[string]*metric.OpStats
}

func (c bookieOpStats) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c bookieOpStats) Collect(ch chan<- prometheus.Metric) {
	for b, o := range c.by() {
		collectOpStats(ch, c.desc, o, 1e-3, b)
	}
}
