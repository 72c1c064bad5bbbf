package ledgerclient

import (
	"context"
	"errors"
	"time"

	"keeper/internal/metric"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
)

// ChannelScope is the prefix BookKeeper gives the figures of its client's
// connection to one bookie, each labelled with the bookie.
const ChannelScope = "per_channel_bookie_client"

// ChannelStats are the figures of the client's connection to one bookie
// (BookKeeper's PerChannelBookieClient; docs/observability.md,
// "BookKeeper"). Latencies are in µs. A request is timed from the moment
// it is handed to the live connection to its answer; one that gets none
// within its timeout counts as a failure of its operation and as a
// success of its TIMEOUT_ figure, as BookKeeper counts a timed-out
// completion.
type ChannelStats struct {
	ReadEntry, TimeoutReadEntry metric.OpStats // READ_ENTRY (batch reads included), TIMEOUT_READ_ENTRY
	AddEntry, TimeoutAddEntry   metric.OpStats // ADD_ENTRY, TIMEOUT_ADD_ENTRY
	WriteLAC, TimeoutWriteLAC   metric.OpStats // WRITE_LAC, TIMEOUT_WRITE_LAC
	ReadLAC, TimeoutReadLAC     metric.OpStats // READ_LAC, TIMEOUT_READ_LAC
	// Connect times each dial, TLS included (CLIENT_CONNECT_TIMER).
	Connect metric.OpStats
	// AddsOutstanding and ReadsOutstanding are the adds and reads sent
	// and not answered (ADD_OP_OUTSTANDING, READ_OP_OUTSTANDING; counters
	// that go both ways, as BookKeeper's).
	AddsOutstanding, ReadsOutstanding metric.Counter
	// ActivePlain and ActiveTLS are the connections open, without and
	// with TLS (ACTIVE_NON_TLS_CHANNEL_COUNTER, ACTIVE_TLS_CHANNEL_COUNTER).
	ActivePlain, ActiveTLS metric.Counter
	// FailedConnections counts failed dials (FAILED_CONNECTION_COUNTER),
	// FailedTLS those that failed in START_TLS or the TLS handshake
	// (FAILED_TLS_HANDSHAKE_COUNTER).
	FailedConnections, FailedTLS metric.Counter
}

// Channel returns the figures of the connection to bookie b, made on
// first use.
func (m *Metrics) Channel(b string) *ChannelStats {
	m.chanMu.Lock()
	defer m.chanMu.Unlock()
	cs := m.chans[b]
	if cs == nil {
		if m.chans == nil {
			m.chans = map[string]*ChannelStats{}
		}
		cs = new(ChannelStats)
		m.chans[b] = cs
	}
	return cs
}

// channels returns every bookie's figures.
func (m *Metrics) channels() map[string]*ChannelStats {
	m.chanMu.Lock()
	defer m.chanMu.Unlock()
	out := make(map[string]*ChannelStats, len(m.chans))
	for b, cs := range m.chans {
		out[b] = cs
	}
	return out
}

// LatenciesByBookie returns the per-connection latencies labelled bookie,
// by their BookKeeper names, each as a function read at scrape time.
func (m *Metrics) LatenciesByBookie() map[string]func() map[string]*metric.OpStats {
	by := func(f func(*ChannelStats) *metric.OpStats) func() map[string]*metric.OpStats {
		return func() map[string]*metric.OpStats {
			out := map[string]*metric.OpStats{}
			for b, cs := range m.channels() {
				out[b] = f(cs)
			}
			return out
		}
	}
	return map[string]func() map[string]*metric.OpStats{
		ChannelScope + "_READ_ENTRY":           by(func(cs *ChannelStats) *metric.OpStats { return &cs.ReadEntry }),
		ChannelScope + "_TIMEOUT_READ_ENTRY":   by(func(cs *ChannelStats) *metric.OpStats { return &cs.TimeoutReadEntry }),
		ChannelScope + "_ADD_ENTRY":            by(func(cs *ChannelStats) *metric.OpStats { return &cs.AddEntry }),
		ChannelScope + "_TIMEOUT_ADD_ENTRY":    by(func(cs *ChannelStats) *metric.OpStats { return &cs.TimeoutAddEntry }),
		ChannelScope + "_WRITE_LAC":            by(func(cs *ChannelStats) *metric.OpStats { return &cs.WriteLAC }),
		ChannelScope + "_TIMEOUT_WRITE_LAC":    by(func(cs *ChannelStats) *metric.OpStats { return &cs.TimeoutWriteLAC }),
		ChannelScope + "_READ_LAC":             by(func(cs *ChannelStats) *metric.OpStats { return &cs.ReadLAC }),
		ChannelScope + "_TIMEOUT_READ_LAC":     by(func(cs *ChannelStats) *metric.OpStats { return &cs.TimeoutReadLAC }),
		ChannelScope + "_CLIENT_CONNECT_TIMER": by(func(cs *ChannelStats) *metric.OpStats { return &cs.Connect }),
	}
}

// channelCounters returns the per-connection counters labelled bookie.
func (m *Metrics) channelCounters() map[string]func() map[string]int64 {
	by := func(f func(*ChannelStats) *metric.Counter) func() map[string]int64 {
		return func() map[string]int64 {
			out := map[string]int64{}
			for b, cs := range m.channels() {
				out[b] = f(cs).Load()
			}
			return out
		}
	}
	return map[string]func() map[string]int64{
		ChannelScope + "_ADD_OP_OUTSTANDING":  by(func(cs *ChannelStats) *metric.Counter { return &cs.AddsOutstanding }),
		ChannelScope + "_READ_OP_OUTSTANDING": by(func(cs *ChannelStats) *metric.Counter { return &cs.ReadsOutstanding }),
		ChannelScope + "_ACTIVE_NON_TLS_CHANNEL_COUNTER": by(func(cs *ChannelStats) *metric.Counter {
			return &cs.ActivePlain
		}),
		ChannelScope + "_ACTIVE_TLS_CHANNEL_COUNTER": by(func(cs *ChannelStats) *metric.Counter { return &cs.ActiveTLS }),
		ChannelScope + "_FAILED_CONNECTION_COUNTER":  by(func(cs *ChannelStats) *metric.Counter { return &cs.FailedConnections }),
		ChannelScope + "_FAILED_TLS_HANDSHAKE_COUNTER": by(func(cs *ChannelStats) *metric.Counter {
			return &cs.FailedTLS
		}),
	}
}

// ops returns the operation's figures and its outstanding counter, or nil
// for an operation BookKeeper does not time per connection.
func (cs *ChannelStats) ops(op bkproto.OperationType) (o, timeout *metric.OpStats, outstanding *metric.Counter) {
	switch op {
	case bkproto.OperationType_ADD_ENTRY:
		return &cs.AddEntry, &cs.TimeoutAddEntry, &cs.AddsOutstanding
	case bkproto.OperationType_READ_ENTRY:
		return &cs.ReadEntry, &cs.TimeoutReadEntry, &cs.ReadsOutstanding
	case bkproto.OperationType_WRITE_LAC:
		return &cs.WriteLAC, &cs.TimeoutWriteLAC, nil
	case bkproto.OperationType_READ_LAC:
		return &cs.ReadLAC, &cs.TimeoutReadLAC, nil
	}
	return nil, nil, nil
}

// sent notes a request of operation op handed to the connection. A nil
// ChannelStats (a client without metrics) notes nothing.
func (cs *ChannelStats) sent(op bkproto.OperationType) {
	if cs == nil {
		return
	}
	if _, _, out := cs.ops(op); out != nil {
		out.Inc()
	}
}

// answered notes the outcome of a request of operation op sent at start:
// ok when the bookie answered EOK, timedOut when no answer came within
// the request's timeout.
func (cs *ChannelStats) answered(op bkproto.OperationType, start time.Time, ok, timedOut bool) {
	if cs == nil {
		return
	}
	o, timeout, out := cs.ops(op)
	if o == nil {
		return
	}
	if out != nil {
		out.Add(-1)
	}
	us := time.Since(start).Microseconds()
	if timedOut {
		timeout.Record(us, true)
	}
	o.Record(us, ok)
}

// timedOut reports whether err is a request's own timeout: the deadline
// of a Send, or of the context of a Call.
func timedOut(err error) bool {
	return errors.Is(err, bookierpc.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
}

// respOK reports whether a call succeeded with EOK.
func respOK(resp *bkproto.Response, err error) bool {
	return err == nil && bkproto.ResponseStatus(resp) == bkproto.StatusCode_EOK
}

// dialed notes a dial that took since start: a live connection, with TLS
// or without, or a failure (of START_TLS or the handshake when tlsFailed).
func (cs *ChannelStats) dialed(start time.Time, cl *bookierpc.Client, err error) {
	if cs == nil {
		return
	}
	cs.Connect.Record(time.Since(start).Microseconds(), err == nil)
	switch {
	case err != nil && errors.Is(err, bookierpc.ErrTLS):
		cs.FailedConnections.Inc()
		cs.FailedTLS.Inc()
	case err != nil:
		cs.FailedConnections.Inc()
	case cl.TLS():
		cs.ActiveTLS.Inc()
	default:
		cs.ActivePlain.Inc()
	}
}

// closed notes the end of a live connection.
func (cs *ChannelStats) closed(cl *bookierpc.Client) {
	if cs == nil {
		return
	}
	if cl.TLS() {
		cs.ActiveTLS.Add(-1)
	} else {
		cs.ActivePlain.Add(-1)
	}
}
