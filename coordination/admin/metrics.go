package admin

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metricHelp lists the gauges /metrics exports, under the names Apache
// ZooKeeper's PrometheusMetricsProvider gives them (the mntr keys without
// zk_). Every one is a mntr field; the collector reads the values from
// monitorFields, so the two never disagree.
var metricHelp = map[string]string{
	"avg_latency":                 "Average request latency since the last stat reset, in ms.",
	"max_latency":                 "Maximum request latency since the last stat reset, in ms.",
	"min_latency":                 "Minimum request latency since the last stat reset, in ms.",
	"packets_received":            "Requests received since the last stat reset.",
	"packets_sent":                "Packets (replies and notifications) sent since the last stat reset.",
	"num_alive_connections":       "Open client connections.",
	"outstanding_requests":        "Requests queued on client connections and not yet answered.",
	"uptime":                      "Time since the server started, in ms.",
	"znode_count":                 "Znodes in the tree, counted as ZooKeeper counts them (the root twice).",
	"watch_count":                 "Data and child watch registrations.",
	"ephemerals_count":            "Ephemeral znodes.",
	"approximate_data_size":       "Approximate size of the tree: path lengths plus data lengths, in bytes.",
	"global_sessions":             "Sessions in the session table.",
	"local_sessions":              "Local sessions (always 0: keeper has none).",
	"open_file_descriptor_count":  "Open file descriptors of the process.",
	"max_file_descriptor_count":   "Limit on open file descriptors of the process.",
	"connection_drop_probability": "Probability of dropping a new connection under load (always 0).",
	"auth_failed_count":           "Failed authentications since the server started.",
}

// collector exports monitorFields as gauges, reading the core through
// Inspect at scrape time. A scrape of a stopped server yields only the Go
// and process metrics.
type collector struct {
	a     *Admin
	descs map[string]*prometheus.Desc
}

func newCollector(a *Admin) *collector {
	c := &collector{a: a, descs: make(map[string]*prometheus.Desc, len(metricHelp))}
	for name, help := range metricHelp {
		c.descs[name] = prometheus.NewDesc(name, help, nil, nil)
	}
	return c
}

// Describe sends every gauge's description.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect sends the current value of every gauge the platform supports.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	f, ok := c.a.facts()
	if !ok {
		return
	}
	for _, fl := range c.a.monitorFields(f) {
		d, exported := c.descs[fl.key]
		if !exported {
			continue
		}
		var v float64
		switch x := fl.value.(type) {
		case int64:
			v = float64(x)
		case javaFloat:
			v = float64(x)
		default:
			continue
		}
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
}
