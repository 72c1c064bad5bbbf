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
	for _, ok := range []bool{false, true} {
		d := c.stats.Outcome(ok)
		count, sum := d.Count(), d.Sum()
		values := d.Quantiles(opStatsQuantiles...)
		quantiles := make(map[float64]float64, len(values))
		for i, q := range opStatsQuantiles {
			quantiles[q] = values[i] * c.scale
		}
		label := "false"
		if ok {
			label = "true"
		}
		ch <- prometheus.MustNewConstSummary(c.desc, uint64(count), float64(sum)*c.scale, quantiles, label)
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

// MetricsHandler serves, at any path, the given figures in BookKeeper's
// Prometheus format: latencies recorded in µs as summaries in ms, counts
// as counters, gauges as gauges read at each scrape. It is how a process that is not a bookie (a ledger client's,
// with ledgerclient.Metrics) exports BookKeeper's client metrics.
func MetricsHandler(latencies map[string]*metric.OpStats, counters map[string]*metric.Counter,
	gauges map[string]*atomic.Int64) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	for name, o := range latencies {
		if err := reg.Register(NewOpStatsCollector(name, name, o, 1e-3)); err != nil {
			return nil, fmt.Errorf("bookie: metric %s: %w", name, err)
		}
	}
	for name, c := range counters {
		if err := reg.Register(counterCollector{prometheus.NewDesc(name, name, nil, nil), c}); err != nil {
			return nil, fmt.Errorf("bookie: metric %s: %w", name, err)
		}
	}
	for name, g := range gauges {
		if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: name},
			func() float64 { return float64(g.Load()) })); err != nil {
			return nil, fmt.Errorf("bookie: metric %s: %w", name, err)
		}
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}
