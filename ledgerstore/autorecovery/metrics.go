package autorecovery

import "keeper/internal/metric"

// FigureKind is how a Figure is exported.
type FigureKind uint8

// The kinds of figures, as BookKeeper's stats types.
const (
	// Gauge is a value read when asked (BookKeeper's Gauge).
	Gauge FigureKind = iota
	// Counter is a count that only grows (BookKeeper's Counter).
	Counter
	// Sizes is a distribution of recorded values (an OpStatsLogger of
	// counts rather than latencies).
	Sizes
)

// Figure is one of the daemon's metrics under BookKeeper's name for it:
// the stat's name in its auditor's or replication worker's scope, as
// BookKeeper's standalone autorecovery exports it. A bookie that runs
// the daemon exports it under "replication_" and that name, as
// BookKeeper's bookie scopes its embedded autorecovery
// (docs/observability.md).
type Figure struct {
	Name, Help string
	Kind       FigureKind
	Value      func() float64  // Gauge and Counter
	Sizes      *metric.OpStats // Sizes
}

// BookKeeper's stats names (its ReplicationStats), scoped.
const (
	// MetricNotAdhering is the gauge of the closed ledgers the last
	// placement policy check found not adhering.
	MetricNotAdhering = "auditor_NUM_LEDGERS_NOT_ADHERING_TO_PLACEMENT_POLICY"
	// MetricUnderReplicated is the distribution of how many ledgers each
	// audit that marked some marked.
	MetricUnderReplicated = "auditor_NUM_UNDER_REPLICATED_LEDGERS"
	// MetricLedgersReplicated counts the ledgers this daemon's worker
	// finished replicating.
	MetricLedgersReplicated = "replication_worker_NUM_FULL_OR_PARTIAL_LEDGERS_REPLICATED"
)

// Figures returns the daemon's metrics. The auditor's are this daemon's
// own: zero, or the last values, while another daemon audits.
func (d *Daemon) Figures() []Figure {
	return []Figure{
		{Name: MetricNotAdhering, Kind: Gauge,
			Help:  "Closed ledgers whose ensembles did not meet the placement policy at the last placement check.",
			Value: func() float64 { return float64(d.PlacementCheck().NotAdhering) }},
		{Name: MetricUnderReplicated, Kind: Sizes,
			Help: "Ledgers marked under-replicated by each audit that marked any.", Sizes: &d.underReplicated},
		{Name: MetricLedgersReplicated, Kind: Counter, Help: "Ledgers this worker finished replicating.",
			Value: func() float64 { return float64(d.Stats().LedgersReplicated) }},
	}
}
