package ledgerclient

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"keeper/internal/metric"
	"keeper/ledgerstore/ledger"
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

	// ReadEntryDM counts copies of entries read (by reads, tails and
	// recovery) that failed verification (READ_ENTRY_DM).
	ReadEntryDM metric.Counter
	// AddEntryUR counts failed answers for entries already acknowledged
	// from a bookie still in their write set: entries left with fewer than
	// Qw copies (ADD_ENTRY_UR).
	AddEntryUR metric.Counter
	// RecoverReadEntries and RecoverAddEntries record, per recovery, the
	// entries it read forward and the re-adds that reached Qa, as a
	// success or a failure of the recovery (LEDGER_RECOVER_READ_ENTRIES,
	// LEDGER_RECOVER_ADD_ENTRIES).
	RecoverReadEntries, RecoverAddEntries metric.OpStats
	// NotAdhering counts ensembles, new or with replacements, that do not
	// meet the placement policy
	// (bookie_watcher_ENSEMBLE_NOT_ADHERING_TO_PLACEMENT_POLICY_TOTAL).
	NotAdhering metric.Counter
	// BookiesJoined and BookiesLeft record 1 for each bookie that joined
	// or left the writable bookies the registry watch delivers (BOOKIES_JOINED,
	// BOOKIES_LEFT; the first delivery joins every writable bookie, as
	// BookKeeper's placement policy starts knowing none).
	BookiesJoined, BookiesLeft metric.OpStats
	// FailedToResolve counts bookies that joined with no rack while rack
	// information is configured (static racks or a rack document): they
	// go to the default rack (FAILED_TO_RESOLVE_NETWORK_LOCATION_TOTAL).
	FailedToResolve metric.Counter
	// WritableInDefaultRack is the writable bookies in the policy's default
	// location at the last registry delivery
	// (NUM_WRITABLE_BOOKIES_IN_DEFAULT_RACK).
	WritableInDefaultRack atomic.Int64

	distMu sync.Mutex
	dist   map[string]*metric.Counter // by bookie: LEDGER_ENSEMBLE_BOOKIE_DISTRIBUTION

	chanMu sync.Mutex
	chans  map[string]*ChannelStats // by bookie: the per_channel_bookie_client figures
}

// EnsembleBookie counts b once more in a new ledger's ensemble
// (LEDGER_ENSEMBLE_BOOKIE_DISTRIBUTION, labelled bookie).
func (m *Metrics) EnsembleBookie(b string) {
	m.distMu.Lock()
	c := m.dist[b]
	if c == nil {
		if m.dist == nil {
			m.dist = map[string]*metric.Counter{}
		}
		c = new(metric.Counter)
		m.dist[b] = c
	}
	m.distMu.Unlock()
	c.Inc()
}

// EnsembleDistribution returns the counts EnsembleBookie made, by bookie.
func (m *Metrics) EnsembleDistribution() map[string]int64 {
	m.distMu.Lock()
	defer m.distMu.Unlock()
	out := make(map[string]int64, len(m.dist))
	for b, c := range m.dist {
		out[b] = c.Load()
	}
	return out
}

// CountersByBookie returns the counters labelled bookie by their
// BookKeeper names, each as a function read at scrape time.
func (m *Metrics) CountersByBookie() map[string]func() map[string]int64 {
	out := m.channelCounters()
	out[ClientScope+"_LEDGER_ENSEMBLE_BOOKIE_DISTRIBUTION"] = m.EnsembleDistribution
	return out
}

// Values returns the figures recorded as plain values (counts), not
// latencies, by their BookKeeper names.
func (m *Metrics) Values() map[string]*metric.OpStats {
	return map[string]*metric.OpStats{
		ClientScope + "_LEDGER_RECOVER_READ_ENTRIES": &m.RecoverReadEntries,
		ClientScope + "_LEDGER_RECOVER_ADD_ENTRIES":  &m.RecoverAddEntries,
		ClientScope + "_BOOKIES_JOINED":              &m.BookiesJoined,
		ClientScope + "_BOOKIES_LEFT":                &m.BookiesLeft,
	}
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
		ClientScope + "_READ_ENTRY_DM":          &m.ReadEntryDM,
		ClientScope + "_ADD_ENTRY_UR":           &m.AddEntryUR,

		ClientScope + "_FAILED_TO_RESOLVE_NETWORK_LOCATION_TOTAL":                       &m.FailedToResolve,
		ClientScope + "_bookie_watcher_ENSEMBLE_NOT_ADHERING_TO_PLACEMENT_POLICY_TOTAL": &m.NotAdhering,
	}
}

// Gauges returns the gauges by their BookKeeper names.
func (m *Metrics) Gauges() map[string]*atomic.Int64 {
	return map[string]*atomic.Int64{
		ClientScope + "_NUM_PENDING_ADD":                      &m.PendingAdds,
		ClientScope + "_NUM_WRITABLE_BOOKIES_IN_DEFAULT_RACK": &m.WritableInDefaultRack,
	}
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

// countStats adds a state machine's counts to the metrics, if the client
// keeps them.
func (c *Client) countStats(st ledger.Stats) {
	m := c.cfg.Metrics
	if m == nil || st == (ledger.Stats{}) {
		return
	}
	m.ReadEntryDM.Add(int64(st.DigestMismatches))
	m.AddEntryUR.Add(int64(st.UnderReplicatedAdds))
	m.NotAdhering.Add(int64(st.NotAdhering))
}

// recordRecovery records a recovery's entry counts, if the client keeps
// metrics.
func (c *Client) recordRecovery(out *ledger.Outcome, ok bool) {
	if m := c.cfg.Metrics; m != nil && out != nil {
		m.RecoverReadEntries.Record(out.RecoveryReads, ok)
		m.RecoverAddEntries.Record(out.RecoveryAdds, ok)
	}
}
func notAdhering(m *Metrics) *metric.Counter { return &m.NotAdhering }

// recordTopology records a change of the writable bookies from known to
// writable, as BookKeeper's placement policy records its cluster changes:
// each bookie that joined or left, each joining bookie whose rack is not
// known while rack information is configured, and the writable bookies in
// the default location.
func (c *Client) recordTopology(known, writable []ledger.BookieID, racks map[ledger.BookieID]string) {
	m := c.cfg.Metrics
	if m == nil {
		return
	}
	configured := len(c.cfg.Racks) > 0 || c.cfg.RackInfoPath != ""
	def := c.cfg.Placement.DefaultLocation()
	var inDefault int64
	for _, b := range writable {
		loc, placed := racks[b]
		if !placed || loc == "" {
			loc = def
		}
		if loc == def {
			inDefault++
		}
		if slices.Contains(known, b) {
			continue
		}
		m.BookiesJoined.Record(1, true)
		if configured && !placed {
			m.FailedToResolve.Inc()
		}
	}
	for _, b := range known {
		if !slices.Contains(writable, b) {
			m.BookiesLeft.Record(1, true)
		}
	}
	m.WritableInDefaultRack.Store(inDefault)
}
