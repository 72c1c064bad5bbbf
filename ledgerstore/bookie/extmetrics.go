package bookie

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"keeper/internal/metric"
)

// Figures another part of the bookie's process keeps (the autorecovery
// daemon of a bookie with autoRecoveryDaemonEnabled) are exported with
// the bookie's own, on /metrics of the metrics listener and of the admin
// API. The caller names them as BookKeeper's Prometheus provider would
// (scope_NAME). A name already registered is an error.

// RegisterGauge exports value, read at every scrape, as a gauge.
func (b *Bookie) RegisterGauge(name, help string, value func() float64) error {
	return b.registerMetric(name, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, value))
}

// RegisterCounter exports value, read at every scrape, as a counter; it
// must never go down.
func (b *Bookie) RegisterCounter(name, help string, value func() float64) error {
	return b.registerMetric(name, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, value))
}

// RegisterSizes exports o as BookKeeper exports an OpStatsLogger of
// counts or sizes: a summary of the values as recorded.
func (b *Bookie) RegisterSizes(name, help string, o *metric.OpStats) error {
	return b.registerMetric(name, NewOpStatsCollector(name, help, o, 1))
}

func (b *Bookie) registerMetric(name string, c prometheus.Collector) error {
	if err := b.m.reg.Register(c); err != nil {
		return fmt.Errorf("bookie: metric %s: %w", name, err)
	}
	return nil
}
