package httpadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"keeper/ledgerstore/ledger"
)

// BookKeeper's /api/v1/autorecovery/... endpoints (docs/bookie-http.md).
// BookKeeper answers most failures of these services with 404 and a
// sentence, a failing metadata store included; keeper does the same.

// Recovery is the cluster's autorecovery as these endpoints use it: package
// autorecovery's Operator, on the bookie's metadata store, the calls
// `keeper ledger` makes too. The bookie's owner wires it in (bookie.Config's
// HTTPRecovery): the bookie does not import autorecovery, whose tests run
// bookies.
type Recovery interface {
	// UnderReplicated lists the marked ledgers, ascending, with the bookies
	// each misses; a non-blank including keeps those missing it, a
	// non-blank excluding drops those missing it.
	UnderReplicated(ctx context.Context, including, excluding string) (ids []int64, missing [][]string, err error)
	// CurrentAuditor names the elected auditor; ok is false if none is.
	CurrentAuditor(ctx context.Context) (id string, ok bool, err error)
	// TriggerAudit makes the auditor mark every lost bookie's ledgers now.
	TriggerAudit(ctx context.Context) error
	// StoredDelay and SetDelay read and write lostBookieRecoveryDelay, in
	// seconds.
	StoredDelay(ctx context.Context) (seconds int, err error)
	SetDelay(ctx context.Context, seconds int) error
	// ReplicationEnabled and SetReplicationEnabled read and flip the
	// switch that pauses every replication worker.
	ReplicationEnabled(ctx context.Context) (bool, error)
	SetReplicationEnabled(ctx context.Context, on bool) error
	// RecoverBookies copies what the stopped bookies held to others until
	// no ledger names them, then deletes their cookies if asked. It runs
	// until done or ctx ends.
	RecoverBookies(ctx context.Context, bookies []ledger.BookieID, deleteCookies bool) error
}

// Ledgers is the ledger client as /api/v1/ledger/read and
// /api/v1/bookie/sanity use it (wired in by the bookie's owner like
// Recovery: the bookie does not import the ledger client, whose tests run
// bookies).
type Ledgers interface {
	OpenNoRecovery(ctx context.Context, id int64, password []byte) (LedgerReader, error)
	// SanityTest writes entries to a new ledger held to bookie alone,
	// reads them back, and deletes the ledger.
	SanityTest(ctx context.Context, bookie ledger.BookieID, entries int) error
}

// LedgerReader reads one ledger opened without recovery.
type LedgerReader interface {
	// ReadLAC learns the LAC (a closed ledger's last entry).
	ReadLAC(ctx context.Context) (int64, error)
	// Read returns entries first..last, last at most the LAC.
	Read(ctx context.Context, first, last int64) ([]ledger.Entry, error)
}

// errRegistered refuses a recovery of a bookie that is still registered.
const errRegistered = "the bookie is registered (running): stop it first"

var (
	errBusy   = errors.New("another recovery is running")
	errClosed = errors.New("the admin API is shutting down")
)

// noRecovery answers an autorecovery endpoint on a bookie run without
// the autorecovery backend (or the metadata store it works on).
func (a *api) noRecovery(w http.ResponseWriter) bool {
	if a.o.Recovery == nil {
		if a.noMetadata(w) {
			return true
		}
		text(w, http.StatusInternalServerError, "The bookie runs without autorecovery's admin calls")
		return true
	}
	return false
}

// withRecovery runs call with the autorecovery backend under the
// request's metadata deadline, or answers as noRecovery does on a bookie
// without it.
func (a *api) withRecovery(w http.ResponseWriter, r *http.Request, call func(ctx context.Context, rec Recovery)) {
	if a.noRecovery(w) {
		return
	}
	ctx, cancel := mdContext(r)
	defer cancel()
	call(ctx, a.o.Recovery)
}

// startJob runs a recovery in the background, one at a time: BookKeeper
// queues them on an executor without bound; keeper refuses a second one
// while the first runs (errBusy). Close cancels it.
func (a *api) startJob(what string, run func(ctx context.Context) error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.closed:
		return errClosed
	case a.job != "":
		return fmt.Errorf("%w: %s", errBusy, a.job)
	}
	a.job = what
	a.jobs.Go(func() {
		a.o.Logger.Info("recovery started", "job", what)
		if err := run(a.life); err != nil {
			a.o.Logger.Error("recovery failed", "job", what, "err", err)
		} else {
			a.o.Logger.Info("recovery done", "job", what)
		}
		a.mu.Lock()
		a.job = ""
		a.mu.Unlock()
	})
	return nil
}

// recovery starts the background copy of bookies' ledgers and, if asked,
// the deletion of their cookies. It checks what it can before answering:
// the ids, that the bookies are stopped, and the metadata.
func (a *api) recovery(r *http.Request, what string, bookies []ledger.BookieID, deleteCookie bool) (int, string) {
	for _, b := range bookies {
		if err := b.Validate(); err != nil {
			return http.StatusBadRequest, err.Error()
		}
	}
	switch {
	case a.o.Metadata == nil:
		return http.StatusInternalServerError, "The bookie runs without a metadata store"
	case a.o.Recovery == nil:
		return http.StatusInternalServerError, "The bookie runs without autorecovery's admin calls"
	}
	ctx, cancel := mdContext(r)
	defer cancel()
	reg, err := a.o.Metadata.Bookies(ctx)
	if err != nil {
		return http.StatusInternalServerError, err.Error()
	}
	for _, b := range bookies {
		if containsID(reg.Writable, b) || containsID(reg.ReadOnly, b) {
			return http.StatusBadRequest, fmt.Sprintf("%s: %s", errRegistered, b)
		}
	}
	rec := a.o.Recovery
	err = a.startJob(what, func(ctx context.Context) error {
		return rec.RecoverBookies(ctx, bookies, deleteCookie)
	})
	if err != nil {
		return http.StatusServiceUnavailable, err.Error()
	}
	return http.StatusOK, ""
}

func containsID(ids []ledger.BookieID, b ledger.BookieID) bool {
	for _, id := range ids {
		if id == b {
			return true
		}
	}
	return false
}

// truthy reads a JSON flag as Jackson and Boolean.parseBoolean do: true,
// or a string reading "true" in any case.
func truthy(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(v, "true")
	}
	return false
}

// recoverBookie is PUT /api/v1/autorecovery/bookie: {"bookie_src": [ids],
// "delete_cookie": bool}. BookKeeper recovers only the first id of the
// list; keeper recovers every one.
func (a *api) recoverBookie(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		text(w, http.StatusBadRequest, "Failed to read the request body: "+err.Error())
		return
	}
	if len(body) == 0 {
		text(w, http.StatusNotFound, "No request body provide.")
		return
	}
	var req struct {
		BookieSrc    []string `json:"bookie_src"`
		DeleteCookie any      `json:"delete_cookie"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		text(w, http.StatusNotFound, "ERROR parameters: "+err.Error())
		return
	}
	if r.Method != http.MethodPut || len(req.BookieSrc) == 0 {
		text(w, http.StatusNotFound, "Not found method. Should be PUT method")
		return
	}
	bookies := make([]ledger.BookieID, 0, len(req.BookieSrc))
	for _, s := range req.BookieSrc {
		if !containsID(bookies, ledger.BookieID(s)) {
			bookies = append(bookies, ledger.BookieID(s))
		}
	}
	code, msg := a.recovery(r, "recover "+strings.Join(req.BookieSrc, ","), bookies, truthy(req.DeleteCookie))
	if code != http.StatusOK {
		text(w, code, msg)
		return
	}
	text(w, http.StatusOK, "Success send recovery request command.")
}

// decommission is PUT /api/v1/autorecovery/decommission: {"bookie_src":
// id, "delete_cookie": bool}.
func (a *api) decommission(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, notPut, http.MethodPut) {
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		text(w, http.StatusBadRequest, "Failed to read the request body: "+err.Error())
		return
	}
	if len(body) == 0 {
		text(w, http.StatusNotFound, "Null request body for DecommissionService.")
		return
	}
	var kv map[string]any
	if err := json.Unmarshal(body, &kv); err != nil {
		text(w, http.StatusBadRequest, "Failed to handle the request, exception: "+err.Error())
		return
	}
	src, ok := kv["bookie_src"]
	if !ok {
		text(w, http.StatusNotFound, "Request body not contains bookie_src.")
		return
	}
	id, ok := src.(string)
	if !ok {
		text(w, http.StatusNotFound, fmt.Sprintf("Exception when send decommission command.bookie_src %v is not a string", src))
		return
	}
	b := ledger.BookieID(id)
	code, msg := a.recovery(r, "decommission "+id, []ledger.BookieID{b}, truthy(kv["delete_cookie"]))
	switch code {
	case http.StatusOK:
		text(w, http.StatusOK, "Success send decommission Bookie command "+id)
	case http.StatusBadRequest:
		text(w, http.StatusNotFound, "Exception when send decommission command."+msg)
	default:
		text(w, code, msg)
	}
}

// listUnderReplicated is GET /api/v1/autorecovery/list_under_replicated_ledger,
// with missingreplica, excludingmissingreplica and printmissingreplica.
func (a *api) listUnderReplicated(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, notGet, http.MethodGet) {
		return
	}
	a.withRecovery(w, r, func(ctx context.Context, rec Recovery) {
		q := r.URL.Query()
		ids, missing, err := rec.UnderReplicated(ctx, q.Get("missingreplica"), q.Get("excludingmissingreplica"))
		if err != nil {
			text(w, http.StatusNotFound, "Exception when get."+err.Error())
			return
		}
		if len(ids) == 0 {
			text(w, http.StatusNotFound, "No under replicated ledgers found")
			return
		}
		if !q.Has("printmissingreplica") {
			jsonBody(w, anySlice(ids))
			return
		}
		byID := make(obj, len(ids))
		for i, id := range ids {
			byID[i] = field{strconv.FormatInt(id, 10), anySlice(missing[i])}
		}
		jsonBody(w, byID)
	})
}

// anySlice is s as a JSON array.
func anySlice[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// whoIsAuditor is GET /api/v1/autorecovery/who_is_auditor: plain text, as
// BookKeeper's service answers (its documentation shows JSON).
func (a *api) whoIsAuditor(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, notGet, http.MethodGet) {
		return
	}
	a.withRecovery(w, r, func(ctx context.Context, rec Recovery) {
		id, ok, err := rec.CurrentAuditor(ctx)
		switch {
		case err != nil:
			text(w, http.StatusNotFound, "Exception when get."+err.Error())
		case !ok:
			text(w, http.StatusNotFound, "No auditor elected")
		default:
			text(w, http.StatusOK, "Auditor: "+id)
		}
	})
}

// triggerAudit is PUT /api/v1/autorecovery/trigger_audit.
func (a *api) triggerAudit(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, notPut, http.MethodPut) {
		return
	}
	a.withRecovery(w, r, func(ctx context.Context, rec Recovery) {
		if err := rec.TriggerAudit(ctx); err != nil {
			text(w, http.StatusNotFound, "Exception when do operation."+err.Error())
			return
		}
		text(w, http.StatusOK, "Success trigger audit.")
	})
}

// lostBookieRecoveryDelay is GET and PUT ({"delay_seconds": n})
// /api/v1/autorecovery/lost_bookie_recovery_delay.
func (a *api) lostBookieRecoveryDelay(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, notPut, http.MethodPut, http.MethodGet) {
		return
	}
	var seconds int
	if r.Method == http.MethodPut {
		var code int
		var msg string
		if seconds, code, msg = delayBody(r); code != http.StatusOK {
			text(w, code, msg)
			return
		}
	}
	a.withRecovery(w, r, func(ctx context.Context, rec Recovery) {
		if r.Method == http.MethodPut {
			if err := rec.SetDelay(ctx, seconds); err != nil {
				text(w, http.StatusInternalServerError, err.Error())
				return
			}
			text(w, http.StatusOK, fmt.Sprintf("Success set lostBookieRecoveryDelay to %d", seconds))
			return
		}
		seconds, err := rec.StoredDelay(ctx)
		if err != nil {
			text(w, http.StatusNotFound, "Exception when get lostBookieRecoveryDelay."+err.Error())
			return
		}
		text(w, http.StatusOK, fmt.Sprintf("lostBookieRecoveryDelay value: %d", seconds))
	})
}

// delayBody reads {"delay_seconds": n}: whole seconds, 0 to Java's
// Integer.MAX_VALUE.
func delayBody(r *http.Request) (int, int, string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return 0, http.StatusBadRequest, "Failed to read the request body: " + err.Error()
	}
	if len(body) == 0 {
		return 0, http.StatusNotFound, "Null request body for lostBookieRecoveryDelay."
	}
	var kv map[string]json.RawMessage
	if err := json.Unmarshal(body, &kv); err != nil {
		return 0, http.StatusBadRequest, "Failed to handle the request, exception: " + err.Error()
	}
	raw, ok := kv["delay_seconds"]
	if !ok {
		return 0, http.StatusNotFound, "Request body not contains lostBookieRecoveryDelay."
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0, http.StatusBadRequest, "Failed to handle the request, exception: delay_seconds " + string(raw) +
			": want whole seconds from 0 to 2147483647"
	}
	return int(n), http.StatusOK, ""
}

// autorecoveryStatus is GET and PUT (?enabled=true|false)
// /api/v1/autorecovery/status: whether workers take work.
func (a *api) autorecoveryStatus(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, "Not found method. Should be GET or PUT method", http.MethodPut, http.MethodGet) {
		return
	}
	q := r.URL.Query()
	if r.Method == http.MethodPut && !q.Has("enabled") {
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k+"="+q.Get(k))
		}
		sort.Strings(keys)
		text(w, http.StatusBadRequest, "Param 'enabled' not found in {"+strings.Join(keys, ", ")+"}")
		return
	}
	a.withRecovery(w, r, func(ctx context.Context, rec Recovery) {
		if r.Method == http.MethodPut {
			if err := rec.SetReplicationEnabled(ctx, strings.EqualFold(q.Get("enabled"), "true")); err != nil {
				text(w, http.StatusInternalServerError, err.Error())
				return
			}
		}
		enabled, err := rec.ReplicationEnabled(ctx)
		if err != nil {
			text(w, http.StatusInternalServerError, err.Error())
			return
		}
		jsonBody(w, obj{{"enabled", enabled}})
	})
}
