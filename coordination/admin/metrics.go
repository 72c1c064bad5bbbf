package admin

import (
	"github.com/prometheus/client_golang/prometheus"

	"keeper/internal/metric"
)

// collector exports the catalog as Apache ZooKeeper's
// PrometheusMetricsProvider does (docs/observability.md): a gauge or a
// counter under its own name, a counter set as a counter labelled key, a
// summary as a Prometheus summary with the median (and the 90th and 99th
// percentiles when detailed), and a summary set as summaries labelled key.
// Values are read at scrape time: gauges through Inspect, the rest from the
// registry, so mntr and /metrics never disagree. A scrape of a stopped
// server yields only the build, Go and process metrics.
type collector struct {
	a         *Admin
	buildInfo *prometheus.Desc
}

func newCollector(a *Admin) *collector {
	return &collector{a: a, buildInfo: prometheus.NewDesc("keeper_build_info",
		"keeper's build: the ZooKeeper version it speaks, its own version, VCS revision and Go version.",
		nil, prometheus.Labels{
			"zookeeper_version": a.cfg.Build.ZooKeeperVersion, "version": a.cfg.Build.Version,
			"revision": a.cfg.Build.Revision, "goversion": a.cfg.Build.GoVersion,
		})}
}

// Describe sends nothing: the metrics present depend on what keeper
// measures and on the server's state, so the collector is unchecked.
func (c *collector) Describe(chan<- *prometheus.Desc) {}

// quantiles are the objectives of ZooKeeper's Prometheus summaries.
var (
	basicQuantiles    = []float64{0.5}
	detailedQuantiles = []float64{0.5, 0.9, 0.99}
)

// Collect sends the current value of every metric keeper measures.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.buildInfo, prometheus.GaugeValue, 1)
	f, ok := c.a.facts()
	if !ok {
		return
	}
	gauges := c.a.gauges(f)
	for _, e := range catalog {
		help := e.name // ZooKeeper's provider uses the name as the help text
		if e.kind == kindGauge {
			if v, ok := gauges[e.name]; ok {
				ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(e.name, help, nil, nil), prometheus.GaugeValue, number(v))
			}
			continue
		}
		m, ok := c.a.cfg.Metrics.Lookup(e.name)
		if !ok {
			continue
		}
		switch m := m.(type) {
		case *metric.Counter:
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(e.name, help, nil, nil), prometheus.CounterValue, float64(m.Load()))
		case *metric.CounterSet:
			d := prometheus.NewDesc(e.name, help, []string{"key"}, nil)
			for _, k := range m.Snapshot() {
				ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(k.Count), k.Key)
			}
		case *metric.Summary:
			d := prometheus.NewDesc(e.name, help, nil, nil)
			ch <- constSummary(d, m.Snapshot(), e.detailed)
		case *metric.SummarySet:
			d := prometheus.NewDesc(e.name, help, []string{"key"}, nil)
			for _, k := range m.Snapshot() {
				ch <- constSummary(d, k.Snapshot, e.detailed, k.Key)
			}
		}
	}
}

// constSummary exports one summary snapshot.
func constSummary(d *prometheus.Desc, s metric.Snapshot, detailed bool, labels ...string) prometheus.Metric {
	qs := basicQuantiles
	if detailed {
		qs = detailedQuantiles
	}
	values := make(map[float64]float64, len(qs))
	for _, q := range qs {
		values[q] = s.Quantile(q)
	}
	return prometheus.MustNewConstSummary(d, uint64(max(s.Count, 0)), float64(s.Sum), values, labels...)
}

// number converts a gauge value to a float.
func number(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case javaFloat:
		return float64(x)
	}
	return 0
}
