package ledgerclient

import (
	"sync/atomic"
	"time"

	"keeper/internal/metric"
)

// Metrics are the client figures BookKeeper's client exports under its
// bookkeeper_client scope (docs/observability.md). Latencies are recorded
// in µs as success or failure; a process with a metrics endpoint exports
// them (bookie.ClientMetricsHandler does, in BookKeeper's Prometheus
// format). A Client with nil Config.Metrics records nothing.
type Metrics struct {
	// AddEntry times each append, from the call to its completion
	// (ADD_ENTRY).
	AddEntry metric.OpStats
	// ReadEntry times each Read call (READ_ENTRY).
	ReadEntry metric.OpStats
	// LedgerCreate, LedgerOpen and LedgerDelete time Create, Open (and
	// OpenNoRecovery) and Delete; LedgerRecover times the recovery part of
	// an Open (LEDGER_CREATE, LEDGER_OPEN, LEDGER_DELETE, LEDGER_RECOVER).
	LedgerCreate, LedgerOpen, LedgerDelete, LedgerRecover metric.OpStats
	// EnsembleChanges counts the new ensembles the writers stored
	// (NUM_ENSEMBLE_CHANGE).
	EnsembleChanges metric.Counter
	// ReadLAC times each ReadHandle.ReadLAC call (READ_LAC).
	ReadLAC metric.OpStats
	// ReadLACAndEntry times each long-poll read sent to a bookie, from
	// the send to its answer: a success when the bookie answered EOK
	// (READ_LAST_CONFIRMED_AND_ENTRY).
	ReadLACAndEntry metric.OpStats
	// SpeculativeReads counts the reads sent to a further replica because
	// the ones asked went unanswered for SpeculativeReadTimeout
	// (SPECULATIVE_READ_COUNT).
	SpeculativeReads metric.Counter
	// LACUpdateHits and LACUpdateMisses count the LACs a read handle
	// learned that moved its LAC forward, and those that did not
	// (LAC_UPDATE_HITS, LAC_UPDATE_MISSES).
	LACUpdateHits, LACUpdateMisses metric.Counter
	// PendingAdds is the appends called and not yet completed, over all
	// the client's writers (NUM_PENDING_ADD; BookKeeper's is one ledger
	// handle's, the last one opened, as each registers the same name).
	PendingAdds atomic.Int64
	// NewEnsembleTime times the placement policy's choice of a new
	// ledger's ensemble in Create; a choice that fails is not recorded,
	// as BookKeeper's bookie watcher records none when it throws
	// (bookie_watcher_NEW_ENSEMBLE_TIME).
	NewEnsembleTime metric.OpStats
}

// ClientScope is the prefix BookKeeper gives its client metrics.
const ClientScope = "bookkeeper_client"

// OpStats returns the latency figures by their BookKeeper names.
func (m *Metrics) OpStats() map[string]*metric.OpStats {
	return map[string]*metric.OpStats{
		ClientScope + "_ADD_ENTRY":      &m.AddEntry,
		ClientScope + "_READ_ENTRY":     &m.ReadEntry,
		ClientScope + "_LEDGER_CREATE":  &m.LedgerCreate,
		ClientScope + "_LEDGER_OPEN":    &m.LedgerOpen,
		ClientScope + "_LEDGER_DELETE":  &m.LedgerDelete,
		ClientScope + "_LEDGER_RECOVER": &m.LedgerRecover,
		ClientScope + "_READ_LAC":       &m.ReadLAC,

		ClientScope + "_READ_LAST_CONFIRMED_AND_ENTRY": &m.ReadLACAndEntry,

		ClientScope + "_bookie_watcher_NEW_ENSEMBLE_TIME": &m.NewEnsembleTime,
	}
}

// Counters returns the counts by their BookKeeper names.
func (m *Metrics) Counters() map[string]*metric.Counter {
	return map[string]*metric.Counter{
		ClientScope + "_NUM_ENSEMBLE_CHANGE":    &m.EnsembleChanges,
		ClientScope + "_SPECULATIVE_READ_COUNT": &m.SpeculativeReads,
		ClientScope + "_LAC_UPDATE_HITS":        &m.LACUpdateHits,
		ClientScope + "_LAC_UPDATE_MISSES":      &m.LACUpdateMisses,
	}
}

// Gauges returns the gauges by their BookKeeper names.
func (m *Metrics) Gauges() map[string]*atomic.Int64 {
	return map[string]*atomic.Int64{ClientScope + "_NUM_PENDING_ADD": &m.PendingAdds}
}

// record notes the time since start in o, if the client keeps metrics.
func (c *Client) record(o func(*Metrics) *metric.OpStats, start time.Time, err error) {
	c.observe(o, start, err == nil)
}

// observe notes the time since start in o as a success or a failure, if
// the client keeps metrics.
func (c *Client) observe(o func(*Metrics) *metric.OpStats, start time.Time, ok bool) {
	if c.cfg.Metrics != nil {
		o(c.cfg.Metrics).Record(time.Since(start).Microseconds(), ok)
	}
}

// count adds 1 to a counter, if the client keeps metrics.
func (c *Client) count(o func(*Metrics) *metric.Counter) {
	if c.cfg.Metrics != nil {
		o(c.cfg.Metrics).Inc()
	}
}

func readEntry(m *Metrics) *metric.OpStats        { return &m.ReadEntry }
func readLAC(m *Metrics) *metric.OpStats          { return &m.ReadLAC }
func readLACAndEntry(m *Metrics) *metric.OpStats  { return &m.ReadLACAndEntry }
func speculativeReads(m *Metrics) *metric.Counter { return &m.SpeculativeReads }
func lacUpdateHits(m *Metrics) *metric.Counter    { return &m.LACUpdateHits }
func lacUpdateMisses(m *Metrics) *metric.Counter  { return &m.LACUpdateMisses }
func ledgerCreate(m *Metrics) *metric.OpStats     { return &m.LedgerCreate }
func ledgerOpen(m *Metrics) *metric.OpStats       { return &m.LedgerOpen }
func ledgerDelete(m *Metrics) *metric.OpStats     { return &m.LedgerDelete }
func ledgerRecover(m *Metrics) *metric.OpStats    { return &m.LedgerRecover }
func newEnsembleTime(m *Metrics) *metric.OpStats  { return &m.NewEnsembleTime }
