package httpadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// Each handler answers a method it does not serve as BookKeeper's service
// for the path does: most with 404, /metrics with 403, /api/v1/bookie/gc
// with 405 (docs/bookie-http.md).

func (a *api) heartbeat(w http.ResponseWriter, r *http.Request) {
	text(w, http.StatusOK, "OK\n")
}

func (a *api) serverConfig(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		keys := make([]string, 0, len(a.o.Properties))
		for k := range a.o.Properties {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(obj, 0, len(keys))
		for _, k := range keys {
			out = append(out, field{k, a.o.Properties[k]})
		}
		jsonBody(w, out)
	case http.MethodPut:
		body, err := io.ReadAll(r.Body)
		if err != nil {
			text(w, http.StatusBadRequest, "Failed to read the request body: "+err.Error())
			return
		}
		if len(body) == 0 {
			text(w, http.StatusNotFound, "Request body not found. should contains k-v pairs")
			return
		}
		var kv map[string]any
		if err := json.Unmarshal(body, &kv); err != nil {
			text(w, http.StatusBadRequest, "Failed to handle the request, exception: "+err.Error())
			return
		}
		// BookKeeper stores the values in its in-memory configuration and
		// says it succeeded, though most settings are read only at start.
		// keeper reads every setting at start and changes none at run
		// time, so it refuses rather than claim a change it does not make.
		keys := make([]string, 0, len(kv))
		for k := range kv {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		text(w, http.StatusForbidden, "keeper does not change its configuration at run time; not set: "+
			strings.Join(keys, ", "))
	default:
		text(w, http.StatusNotFound, "Request body not found. should contains k-v pairs")
	}
}

func (a *api) metrics(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		text(w, http.StatusForbidden, r.Method+" is forbidden. Should be GET method")
		return
	}
	if a.o.Metrics == nil {
		text(w, http.StatusInternalServerError, "no metrics registry")
		return
	}
	a.o.Metrics.ServeHTTP(w, r)
}

func (a *api) info(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, "Only GET is supported.", http.MethodGet) {
		return
	}
	free, total, err := a.o.Bookie.DiskSpace()
	if err != nil {
		text(w, http.StatusInternalServerError, "Failed to measure the ledger directories: "+err.Error())
		return
	}
	jsonBody(w, obj{{"freeSpace", free}, {"totalSpace", total}})
}

func (a *api) state(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, "Only support GET method to retrieve bookie state.", http.MethodGet) {
		return
	}
	b := a.o.Bookie
	jsonBody(w, obj{
		{"running", b.Running()},
		{"readOnly", b.ReadOnly()},
		{"shuttingDown", b.ShuttingDown()},
		{"availableForHighPriorityWrites", b.AvailableForHighPriorityWrites()},
	})
}

func (a *api) isReady(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, "Only support GET method check if bookie is ready.", http.MethodGet) {
		return
	}
	if a.o.Bookie.Running() && !a.o.Bookie.ShuttingDown() {
		text(w, http.StatusOK, "OK")
		return
	}
	text(w, http.StatusServiceUnavailable, "Bookie is not fully started yet")
}

// noMetadata answers an endpoint that needs the metadata store on a
// bookie run without one.
func (a *api) noMetadata(w http.ResponseWriter) bool {
	if a.o.Metadata != nil {
		return false
	}
	text(w, http.StatusInternalServerError, "The bookie runs without a metadata store")
	return true
}

func (a *api) listBookies(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, notGet, http.MethodGet) {
		return
	}
	if a.noMetadata(w) {
		return
	}
	q := r.URL.Query()
	ctx, cancel := mdContext(r)
	defer cancel()
	reg, err := a.o.Metadata.Bookies(ctx)
	if err != nil {
		text(w, http.StatusInternalServerError, err.Error())
		return
	}
	ids := reg.Writable // "rw", and BookKeeper's default for any other type
	if q.Get("type") == "ro" {
		ids = reg.ReadOnly
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	out := make(obj, 0, len(ids))
	for _, id := range ids {
		var host any
		if q.Get("print_hostnames") == "true" {
			if addr, err := a.o.Metadata.BookieAddress(ctx, id); err == nil {
				h, _, err := net.SplitHostPort(addr)
				if err != nil {
					h = addr
				}
				host = h
			}
		}
		out = append(out, field{string(id), host})
	}
	jsonBody(w, out)
}

func (a *api) gc(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPut:
		major, minor, err := gcFlags(r, a.o.Bookie)
		if err == nil {
			err = a.o.Bookie.ForceGC(major, minor)
		}
		if err != nil {
			text(w, http.StatusBadRequest, "Failed to handle the request, exception: "+err.Error())
			return
		}
		jsonBody(w, "Triggered GC on BookieServer: "+a.o.Bookie.ID())
	case http.MethodGet:
		jsonBody(w, obj{{"is_in_force_gc", strconv.FormatBool(a.o.Bookie.InForceGC())}})
	default:
		text(w, http.StatusMethodNotAllowed,
			"Not allowed method. Should be PUT to trigger GC, Or GET to get Force GC state.")
	}
}

func (a *api) gcDetails(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, "Only support GET method to retrieve GC details."+
		" If you want to trigger gc, send a POST to gc endpoint.", http.MethodGet) {
		return
	}
	st := a.o.Bookie.GCStatus()
	// One status per ledger storage; keeper's bookie has one.
	jsonBody(w, []any{obj{
		{"forceCompacting", st.ForceCompacting},
		{"majorCompacting", st.MajorCompacting},
		{"minorCompacting", st.MinorCompacting},
		{"lastMajorCompactionTime", st.LastMajorCompaction.UnixMilli()},
		{"lastMinorCompactionTime", st.LastMinorCompaction.UnixMilli()},
		{"lastEntryLocationCompactionTime", st.LastEntryLocationCompaction.UnixMilli()},
		{"majorCompactionCounter", st.MajorCompactions},
		{"minorCompactionCounter", st.MinorCompactions},
		{"entryLocationCompactionCounter", st.EntryLocationCompactions},
	}})
}

// gcFlags reads a forced run's body, as BookKeeper does: none forces both
// compactions; otherwise forceMajor and forceMinor, each true only if its
// value reads "true" (any case), and when absent true unless that
// compaction is suspended.
func gcFlags(r *http.Request, b Bookie) (major, minor bool, err error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return false, false, err
	}
	if strings.TrimSpace(string(body)) == "" {
		return true, true, nil
	}
	var kv map[string]any
	if err := json.Unmarshal(body, &kv); err != nil {
		return false, false, fmt.Errorf("the body is not a JSON object: %w", err)
	}
	majorSuspended, minorSuspended := b.CompactionSuspended()
	flag := func(key string, suspended bool) bool {
		v, ok := kv[key]
		if !ok {
			return !suspended
		}
		return strings.EqualFold(fmt.Sprint(v), "true")
	}
	return flag("forceMajor", majorSuspended), flag("forceMinor", minorSuspended), nil
}

// ledgerPage is how many ledgers a page of a listing with metadata holds.
const ledgerPage = 100

func (a *api) listLedgers(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, notGet, http.MethodGet) {
		return
	}
	q := r.URL.Query()
	printMeta := q.Get("print_metadata") == "true"
	decode := q.Get("decode_meta") == "true"
	page := -1
	if printMeta && q.Has("page") {
		p, err := strconv.Atoi(q.Get("page"))
		if err != nil {
			text(w, http.StatusBadRequest, "Invalid page: "+q.Get("page"))
			return
		}
		page = p
	}
	if a.noMetadata(w) {
		return
	}
	ctx, cancel := mdContext(r)
	defer cancel()
	ids, err := a.o.Metadata.List(ctx)
	if err != nil {
		text(w, http.StatusInternalServerError, err.Error())
		return
	}
	slices.Sort(ids)
	out := make(obj, 0, len(ids))
	if !printMeta {
		for _, id := range ids {
			out = append(out, field{strconv.FormatInt(id, 10), nil})
		}
		jsonBody(w, out)
		return
	}
	// BookKeeper's page arithmetic, kept as it is: the ledgers counted 1,
	// 2, ... are in page p when (p-1)*100 <= n <= (p-1)*100+99, so the
	// first page holds 99 ledgers and the others 100.
	first, last := 0, 0
	if page > 0 {
		first = (page - 1) * ledgerPage
		last = first + ledgerPage - 1
	}
	for n, id := range ids {
		n++
		if last != 0 && (n < first || n > last) {
			continue
		}
		md, _, err := a.o.Metadata.Read(ctx, id)
		if errors.Is(err, metadata.ErrNoLedger) {
			continue // deleted since the listing
		}
		if err != nil {
			text(w, http.StatusInternalServerError, err.Error())
			return
		}
		key := strconv.FormatInt(id, 10)
		if decode {
			out = append(out, field{key, metadataObject(id, md)})
			continue
		}
		raw, err := metadata.Encode(md)
		if err != nil {
			text(w, http.StatusInternalServerError, err.Error())
			return
		}
		out = append(out, field{key, javaString(raw)})
	}
	jsonBody(w, out)
}

func (a *api) ledgerMetadata(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, notGet, http.MethodGet) {
		return
	}
	q := r.URL.Query()
	if !q.Has("ledger_id") {
		text(w, http.StatusBadRequest, "Missing parameter: ledger_id")
		return
	}
	id, err := strconv.ParseInt(q.Get("ledger_id"), 10, 64)
	if err != nil || id < 0 {
		text(w, http.StatusBadRequest, "Invalid ledger_id: "+q.Get("ledger_id"))
		return
	}
	ctx, cancel := mdContext(r)
	defer cancel()
	if md, ok := a.readMetadata(ctx, w, id); ok {
		jsonBody(w, obj{{strconv.FormatInt(id, 10), metadataObject(id, md)}})
	}
}

// readMetadata reads ledger id's metadata; if it cannot, it has answered
// (404 for a ledger that does not exist, 500 for a failure or a bookie
// without a metadata store).
func (a *api) readMetadata(ctx context.Context, w http.ResponseWriter, id int64) (ledger.Metadata, bool) {
	if a.noMetadata(w) {
		return ledger.Metadata{}, false
	}
	md, _, err := a.o.Metadata.Read(ctx, id)
	if errors.Is(err, metadata.ErrNoLedger) {
		text(w, http.StatusNotFound, fmt.Sprintf("Ledger %d does not exist", id))
		return ledger.Metadata{}, false
	}
	if err != nil {
		text(w, http.StatusInternalServerError, err.Error())
		return ledger.Metadata{}, false
	}
	return md, true
}
