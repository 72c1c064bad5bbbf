package zkcore

import (
	"strings"

	"keeper/coordination/jute"
	"keeper/coordination/txn"
	"keeper/coordination/zkproto"
	"keeper/internal/metric"
)

// coreMetrics are the ZooKeeper metrics the core measures, registered in
// Config.Metrics under ZooKeeper 3.8's names (docs/observability.md). Times
// are differences of the Now values the driver passes in, in ms.
type coreMetrics struct {
	readLatency, updateLatency *metric.Summary // request received to reply queued
	propagationLatency         *metric.Summary // txn time (the leader's wall clock) to applied here
	bytesReceived              *metric.Counter // request frames, length prefix included
	responseBytes, watchBytes  *metric.Counter // replies and notifications, without the length prefix
	connectionRequests         *metric.Counter
	connectionRevalidate       *metric.Counter // reconnects to an existing session
	staleSessionsExpired       *metric.Counter
	nodeCreatedWatch           *metric.Summary // watches one event fired
	nodeDeletedWatch           *metric.Summary
	nodeChangedWatch           *metric.Summary
	nodeChildrenWatch          *metric.Summary
	readPerNamespace           *metric.SummarySet
	writePerNamespace          *metric.SummarySet
	quotaExceeded              *metric.CounterSet
	responseSize               metric.Buffer // last/min/max_client_response_size; srst clears it
}

func newCoreMetrics(r *metric.Registry) *coreMetrics {
	return &coreMetrics{
		readLatency:          r.Summary("readlatency", true),
		updateLatency:        r.Summary("updatelatency", true),
		propagationLatency:   r.Summary("propagation_latency", true),
		bytesReceived:        r.Counter("bytes_received_count"),
		responseBytes:        r.Counter("response_bytes"),
		watchBytes:           r.Counter("watch_bytes"),
		connectionRequests:   r.Counter("connection_request_count"),
		connectionRevalidate: r.Counter("connection_revalidate_count"),
		staleSessionsExpired: r.Counter("stale_sessions_expired"),
		nodeCreatedWatch:     r.Summary("node_created_watch_count", false),
		nodeDeletedWatch:     r.Summary("node_deleted_watch_count", false),
		nodeChangedWatch:     r.Summary("node_changed_watch_count", false),
		nodeChildrenWatch:    r.Summary("node_children_watch_count", false),
		readPerNamespace:     r.SummarySet("read_per_namespace", false),
		writePerNamespace:    r.SummarySet("write_per_namespace", false),
		quotaExceeded:        r.CounterSet("quota_exceeded_error_per_namespace"),
	}
}

// frameHeaderBytes is a frame's length prefix.
const frameHeaderBytes = 4

// latency records a request's latency: updates are the requests that
// became txns (ZooKeeper's requests with a txn header), reads the rest.
func (m *coreMetrics) latency(e *entry, ms int64) {
	if e.kind == kindWrite {
		m.updateLatency.Add(ms)
	} else {
		m.readLatency.Add(ms)
	}
}

// response records a reply or notification frame handed to a connection.
func (m *coreMetrics) response(frame []byte, notification bool) {
	n := int64(len(frame) - frameHeaderBytes)
	if n < 0 {
		return
	}
	m.responseSize.Add(n)
	if notification {
		m.watchBytes.Add(n)
	} else {
		m.responseBytes.Add(n)
	}
}

// fired records how many watches an event fired.
func (m *coreMetrics) fired(typ zkproto.EventType, watches int) {
	switch typ {
	case zkproto.EventNodeCreated:
		m.nodeCreatedWatch.Add(int64(watches))
	case zkproto.EventNodeDeleted:
		m.nodeDeletedWatch.Add(int64(watches))
	case zkproto.EventNodeDataChanged:
		m.nodeChangedWatch.Add(int64(watches))
	case zkproto.EventNodeChildrenChanged:
		m.nodeChildrenWatch.Add(int64(watches))
	}
}

// statOverheadBytes is what ZooKeeper adds to each read's size for the
// Stat it returns: six longs and five ints.
const statOverheadBytes = 6*8 + 5*4

// read records a successful read's size under its top-level namespace:
// the path, the data or the children's names, and the Stat, as ZooKeeper
// counts them.
func (m *coreMetrics) read(req, resp jute.Record) {
	switch r := resp.(type) {
	case *zkproto.GetDataResponse:
		if q, ok := req.(*zkproto.GetDataRequest); ok {
			m.readBytes(q.Path, int64(len(r.Data)))
		}
	case *zkproto.ExistsResponse:
		if q, ok := req.(*zkproto.ExistsRequest); ok {
			m.readBytes(q.Path, 0)
		}
	case *zkproto.GetChildrenResponse:
		if q, ok := req.(*zkproto.GetChildrenRequest); ok {
			m.readBytes(q.Path, childBytes(r.Children))
		}
	case *zkproto.GetChildren2Response:
		if q, ok := req.(*zkproto.GetChildren2Request); ok {
			m.readBytes(q.Path, childBytes(r.Children))
		}
	}
}

func childBytes(children []string) int64 {
	n := 0
	for _, c := range children {
		n += len(c)
	}
	return int64(n)
}

func (m *coreMetrics) readBytes(path string, n int64) {
	if ns, ok := topNamespace(path); ok {
		m.readPerNamespace.Add(ns, int64(len(path))+n+statOverheadBytes)
	}
}

// applied records an applied txn: its propagation latency and, for each
// create, delete and setData in it, the bytes written under the path's
// namespace (path plus data, as ZooKeeper counts them).
func (m *coreMetrics) applied(t *txn.Txn, now Now) {
	if ms := now.WallMs - t.Header.Time; ms >= 0 {
		m.propagationLatency.Add(ms)
	}
	m.written(t.Record)
}

func (m *coreMetrics) written(r jute.Record) {
	add := func(path string, data []byte) {
		if ns, ok := topNamespace(path); ok {
			m.writePerNamespace.Add(ns, int64(len(path)+len(data)))
		}
	}
	switch r := r.(type) {
	case *txn.Create:
		add(r.Path, r.Data)
	case *txn.CreateContainer:
		add(r.Path, r.Data)
	case *txn.CreateTTL:
		add(r.Path, r.Data)
	case *txn.Delete:
		add(r.Path, nil)
	case *txn.SetData:
		add(r.Path, r.Data)
	case *txn.Multi:
		for _, op := range r.Ops {
			m.written(op.Record)
		}
	}
}

// quota records a write refused by a quota under the quota's namespace.
func (m *coreMetrics) quota(prefix string) {
	if ns, ok := topNamespace(prefix); ok {
		m.quotaExceeded.Add(ns, 1)
	}
}

// topNamespace returns the first component of an absolute path ("app" for
// "/app/x"); the root has none.
func topNamespace(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/")
	if !ok || rest == "" {
		return "", false
	}
	ns, _, _ := strings.Cut(rest, "/")
	return ns, true
}
