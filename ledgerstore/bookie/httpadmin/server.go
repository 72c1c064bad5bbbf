// Package httpadmin serves a bookie's HTTP admin API, BookKeeper's
// /heartbeat, /metrics and /api/v1/... endpoints, with their paths,
// methods, status codes and JSON layouts (docs/bookie-http.md). The
// bookie starts it when httpServerEnabled=true.
package httpadmin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"keeper/ledgerstore/bookietls"
	"keeper/ledgerstore/metadata"
)

// Bounds of the server: a client may neither hold a connection open by
// writing slowly nor send an unbounded body, and no more than
// maxInFlight requests run at once (the rest are answered 503).
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
	// MaxBodyBytes bounds a request body; BookKeeper's bodies are small
	// JSON objects.
	MaxBodyBytes = 1 << 20
	maxInFlight  = 8
	// metadataTimeout bounds the metadata store calls of one request.
	metadataTimeout = 30 * time.Second
)

// Bookie is what the admin API asks of the bookie it serves.
type Bookie interface {
	ID() string
	// AdvertisedAddr is the host:port clients dial.
	AdvertisedAddr() string
	// Running is true once the bookie has started and until it begins to
	// shut down; ShuttingDown from then on.
	Running() bool
	ShuttingDown() bool
	ReadOnly() bool
	// AvailableForHighPriorityWrites: recovery adds are still taken.
	AvailableForHighPriorityWrites() bool
	// DiskSpace sums the free and total bytes of the ledger directories.
	DiskSpace() (free, total uint64, err error)
	// ForceGC asks for a garbage collection run now, followed by a major
	// (or else minor) compaction if asked; it does not wait for the run.
	ForceGC(major, minor bool) error
	// InForceGC reports whether a forced run is asked for or running.
	InForceGC() bool
	// CompactionSuspended reports which compactions are suspended; a
	// forced run leaves them out unless asked for by name.
	CompactionSuspended() (major, minor bool)
	// GCStatus reports the garbage collector's state for gc_details.
	GCStatus() GCStatus
	// SuspendCompaction and ResumeCompaction suspend or resume the
	// periodic major and minor compactions, those whose flag is true.
	SuspendCompaction(major, minor bool)
	ResumeCompaction(major, minor bool)
	// SetReadOnly turns the bookie read-only (true) or lets it be writable
	// again (false), at an operator's request; it fails with
	// ErrReadOnlyDisabled under readOnlyModeEnabled=false. A bookie
	// read-only for another reason (full disks, a failed journal) stays so.
	SetReadOnly(ro bool) error
	// LastLogMarks reports, per journal, the position the last checkpoint
	// persisted in its lastMark file.
	LastLogMarks() []LogMark
	// DiskFiles lists the names of the files whose names end in "."+ext
	// below the directories of kind (journal, entry log or index
	// directories, searched recursively), oldest first.
	DiskFiles(kind FileKind, ext string) ([]string, error)
	// CheckCookies checks the cookies of the bookie's directories against
	// its cookie in the metadata store, as a start does.
	CheckCookies(ctx context.Context) error
	// IndexPath is the entry location index's directory.
	IndexPath() string
	// CompactIndex asks for a compaction of the entry location index; it
	// does not wait for it. IndexCompacting reports whether one is asked
	// for or running.
	CompactIndex() error
	IndexCompacting() bool
}

// ErrReadOnlyDisabled refuses a turn to read-only under
// readOnlyModeEnabled=false.
var ErrReadOnlyDisabled = errors.New("read-only mode is disabled")

// LogMark is a journal position: the journal file's id and the offset in
// it.
type LogMark struct{ LogID, Offset int64 }

// FileKind names a set of a bookie's directories.
type FileKind int

// The directories DiskFiles searches.
const (
	JournalFiles FileKind = iota
	EntryLogFiles
	IndexFiles
)

// GCStatus is BookKeeper's garbage collection status: whether a forced run
// and a compaction are under way, when each kind of compaction last ended
// (the collector's start before the first), and how many have run. The
// entry location compaction is keeper's compaction of its pebble index
// (entry_location_compact).
type GCStatus struct {
	ForceCompacting, MajorCompacting, MinorCompacting bool
	LastMajorCompaction, LastMinorCompaction          time.Time
	LastEntryLocationCompaction                       time.Time
	MajorCompactions, MinorCompactions                int64
	EntryLocationCompactions                          int64
}

// Options configure the API.
type Options struct {
	Bookie Bookie
	// Metadata is the bookie's metadata store; nil without one (the
	// endpoints that need it answer 500).
	Metadata *metadata.Store
	// Metrics serves the Prometheus registry of the bookie.
	Metrics http.Handler
	// Properties is the configuration as read from bookkeeper.conf.
	Properties map[string]string
	// Ledgers reads entries for /api/v1/ledger/read; nil: it answers 500.
	Ledgers Ledgers
	// Recovery backs the /api/v1/autorecovery endpoints; nil: they answer
	// 500.
	Recovery Recovery
	// BookieTLS secures list_bookie_info's connections to bookies, as the
	// bookie's ledger clients are secured (its client TLS keys); nil: plain.
	BookieTLS *bookietls.Config
	Logger    *slog.Logger
}

// Server is a listening admin API.
type Server struct {
	ln  net.Listener
	srv *http.Server
	api *API
}

// Listen serves the API on addr until Close.
func Listen(addr string, o Options) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bookie: httpServerPort: %w", err)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	api := Handler(o)
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("http admin server stopped", "err", err)
		}
	}()
	return &Server{ln: ln, srv: srv, api: api}, nil
}

// Addr is the listening address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server and its connections, then the recovery it runs,
// if any.
func (s *Server) Close() error {
	err := s.srv.Close()
	s.api.Close()
	return err
}

// notFoundBody is what BookKeeper's HTTP server (vert.x) answers for a
// path it does not route.
const notFoundBody = "<html><body><h1>Resource not found</h1></body></html>"

type api = API

// API is the admin API's handler. Close stops what it runs in the
// background.
type API struct {
	o   Options
	sem chan struct{}
	// sanityRun holds the one sanity test running.
	sanityRun chan struct{}
	// life ends with Close; background jobs run under it.
	life context.Context
	stop context.CancelFunc
	jobs sync.WaitGroup

	mu     sync.Mutex
	closed bool
	job    string // the recovery running in the background, "" if none
}

// Handler returns the API's handler.
func Handler(o Options) *API {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	a := &API{o: o, sem: make(chan struct{}, maxInFlight), sanityRun: make(chan struct{}, 1)}
	a.life, a.stop = context.WithCancel(context.Background())
	return a
}

// ServeHTTP answers one request.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.serve(w, r) }

// Close cancels the background job, waits for it, and closes the ledger
// client.
func (a *API) Close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.stop()
	a.jobs.Wait()
}

func (a *api) serve(w http.ResponseWriter, r *http.Request) {
	select {
	case a.sem <- struct{}{}:
		defer func() { <-a.sem }()
	default:
		text(w, http.StatusServiceUnavailable, "Too many requests in progress")
		return
	}
	h, ok := a.route(strings.TrimSuffix(r.URL.Path, "/"))
	if !ok {
		text(w, http.StatusNotFound, notFoundBody)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete:
	default:
		// BookKeeper binds each path for these four methods only.
		text(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	h(w, r)
}

func (a *api) route(path string) (http.HandlerFunc, bool) {
	switch path {
	case "/heartbeat":
		return a.heartbeat, true
	case "/api/v1/config/server_config":
		return a.serverConfig, true
	case "/metrics":
		return a.metrics, true
	case "/api/v1/bookie/info":
		return a.info, true
	case "/api/v1/bookie/state":
		return a.state, true
	case "/api/v1/bookie/is_ready":
		return a.isReady, true
	case "/api/v1/bookie/list_bookies":
		return a.listBookies, true
	case "/api/v1/bookie/gc":
		return a.gc, true
	case "/api/v1/bookie/gc_details":
		return a.gcDetails, true
	case "/api/v1/bookie/gc/suspend_compaction":
		return a.compactionSwitch(true), true
	case "/api/v1/bookie/gc/resume_compaction":
		return a.compactionSwitch(false), true
	case "/api/v1/bookie/state/readonly":
		return a.stateReadOnly, true
	case "/api/v1/bookie/cluster_info":
		return a.clusterInfo, true
	case "/api/v1/bookie/list_bookie_info":
		return a.listBookieInfo, true
	case "/api/v1/bookie/sanity":
		return a.sanity, true
	case "/api/v1/bookie/last_log_mark":
		return a.lastLogMark, true
	case "/api/v1/bookie/list_disk_file":
		return a.listDiskFile, true
	case "/api/v1/bookie/expand_storage":
		return a.expandStorage, true
	case "/api/v1/bookie/entry_location_compact":
		return a.entryLocationCompact, true
	case "/api/v1/ledger/list":
		return a.listLedgers, true
	case "/api/v1/ledger/metadata":
		return a.ledgerMetadata, true
	case "/api/v1/ledger/delete":
		return a.deleteLedger, true
	case "/api/v1/ledger/read":
		return a.readLedger, true
	case "/api/v1/autorecovery/status":
		return a.autorecoveryStatus, true
	case "/api/v1/autorecovery/bookie":
		return a.recoverBookie, true
	case "/api/v1/autorecovery/list_under_replicated_ledger":
		return a.listUnderReplicated, true
	case "/api/v1/autorecovery/who_is_auditor":
		return a.whoIsAuditor, true
	case "/api/v1/autorecovery/trigger_audit":
		return a.triggerAudit, true
	case "/api/v1/autorecovery/lost_bookie_recovery_delay":
		return a.lostBookieRecoveryDelay, true
	case "/api/v1/autorecovery/decommission":
		return a.decommission, true
	}
	return nil, false
}

// BookKeeper's most common answers to a method a service does not serve
// (with 404).
const (
	notGet = "Not found method. Should be GET method"
	notPut = "Not found method. Should be PUT method"
)

// allow reports whether r's method is one of methods; if not it answers
// 404 with refusal, as most of BookKeeper's services do.
func allow(w http.ResponseWriter, r *http.Request, refusal string, methods ...string) bool {
	if slices.Contains(methods, r.Method) {
		return true
	}
	text(w, http.StatusNotFound, refusal)
	return false
}

func text(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

func jsonBody(w http.ResponseWriter, v any) { answerJSON(w, http.StatusOK, v) }

func answerJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(pretty(v))
}

// mdContext bounds one request's metadata calls.
func mdContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), metadataTimeout)
}
