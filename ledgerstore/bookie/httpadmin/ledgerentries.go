package httpadmin

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"unicode/utf8"

	"keeper/ledgerstore/metadata"
)

// Bounds of /api/v1/ledger/read. BookKeeper reads whatever range it is
// asked, up to the LAC, into one answer; keeper refuses a range of more
// than one page of entries, and an answer whose payloads pass
// maxReadBytes, rather than hold an unbounded answer in memory.
const (
	entriesPerPage = 1000     // BookKeeper's page of entries
	maxReadBytes   = 32 << 20 // payload bytes in one answer
	readBatch      = 100      // entries asked of the ledger client at once
)

// ledgerParam reads the ledger_id parameter; it has answered the request
// if ok is false.
func ledgerParam(w http.ResponseWriter, r *http.Request) (id int64, ok bool) {
	s := r.URL.Query().Get("ledger_id")
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 0 {
		text(w, http.StatusBadRequest, "Invalid ledger_id: "+s)
		return 0, false
	}
	return id, true
}

// deleteLedger is DELETE /api/v1/ledger/delete?ledger_id=N: it deletes the
// ledger's metadata, as the client's delete does; bookies drop the entries
// at their next garbage collection.
func (a *api) deleteLedger(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, "Not found method. Should be DELETE method", http.MethodDelete) {
		return
	}
	if !r.URL.Query().Has("ledger_id") {
		text(w, http.StatusNotFound, "Not ledger found. Should provide ledger_id=<id>")
		return
	}
	id, ok := ledgerParam(w, r)
	if !ok || a.noMetadata(w) {
		return
	}
	ctx, cancel := mdContext(r)
	defer cancel()
	_, _, err := a.o.Metadata.Read(ctx, id)
	if err == nil {
		err = a.o.Metadata.Delete(ctx, id, metadata.AnyVersion)
	}
	switch {
	case errors.Is(err, metadata.ErrNoLedger):
		text(w, http.StatusNotFound, fmt.Sprintf("Ledger %d does not exist", id))
	case err != nil:
		text(w, http.StatusInternalServerError, err.Error())
	default:
		jsonBody(w, fmt.Sprintf("Deleted ledger: %d", id))
	}
}

// readRange is the entry range of a read request, after BookKeeper's page
// arithmetic: end -1 means up to the LAC.
type readRange struct {
	start, end int64
	page       int // 0: none
}

// parseReadRange reads start_entry_id, end_entry_id and page as
// BookKeeper's ReadLedgerEntryService does. A page p > 0 clips the range
// to entries (p-1)*1000 .. (p-1)*1000+999.
func parseReadRange(q map[string][]string) (readRange, int, string) {
	rr := readRange{start: 0, end: -1}
	get := func(k string) (string, bool) {
		v, ok := q[k]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[0], true
	}
	if s, ok := get("start_entry_id"); ok {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return rr, http.StatusBadRequest, "Invalid start_entry_id: " + s
		}
		rr.start = n
	}
	if s, ok := get("end_entry_id"); ok {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < -1 {
			return rr, http.StatusBadRequest, "Invalid end_entry_id: " + s
		}
		rr.end = n
	}
	page := -1
	if s, ok := get("page"); ok {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return rr, http.StatusBadRequest, "Invalid page: " + s
		}
		page = int(n)
	}
	if page > 0 {
		first := int64(page-1) * entriesPerPage
		last := first + entriesPerPage - 1
		if rr.start == 0 || rr.start < first {
			rr.start = first
		}
		if rr.end == -1 || rr.end > last {
			rr.end = last
		}
		rr.page = page
	}
	if rr.end != -1 && rr.start > rr.end {
		return rr, http.StatusInternalServerError, fmt.Sprintf(
			"parameter for start_entry_id: %d and end_entry_id: %d conflict with page=%d", rr.start, rr.end, page)
	}
	return rr, http.StatusOK, ""
}

// readLedger is GET /api/v1/ledger/read?ledger_id=N[&start_entry_id=
// &end_entry_id=&page=]: the entries up to the LAC, each as
// "<entry id>" : "<payload read as US-ASCII>", in the order Java's HashMap
// gives them.
func (a *api) readLedger(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.Method != http.MethodGet || !q.Has("ledger_id") {
		text(w, http.StatusNotFound, "Not found method. Should be GET method, with ledger_id provided")
		return
	}
	id, ok := ledgerParam(w, r)
	if !ok {
		return
	}
	rr, code, msg := parseReadRange(q)
	if code != http.StatusOK {
		text(w, code, msg)
		return
	}
	ctx, cancel := mdContext(r)
	defer cancel()
	md, ok := a.readMetadata(ctx, w, id)
	if !ok {
		return
	}
	if a.o.Ledgers == nil {
		text(w, http.StatusInternalServerError, "The bookie runs without a ledger client")
		return
	}
	h, err := a.o.Ledgers.OpenNoRecovery(ctx, id, md.Password)
	if err != nil {
		text(w, http.StatusInternalServerError, err.Error())
		return
	}
	lac, err := h.ReadLAC(ctx)
	if err != nil {
		text(w, http.StatusInternalServerError, err.Error())
		return
	}
	last := lac
	if rr.end != -1 && rr.end < last {
		last = rr.end
	}
	if last-rr.start+1 > entriesPerPage {
		text(w, http.StatusBadRequest, fmt.Sprintf("Entries %d to %d are more than %d: ask for a page or a smaller range",
			rr.start, last, entriesPerPage))
		return
	}
	out := map[string]string{}
	var keys []string
	put := func(k, v string) {
		if _, ok := out[k]; !ok {
			keys = append(keys, k)
		}
		out[k] = v
	}
	if rr.page > 0 {
		put("Entries for page: ", strconv.Itoa(rr.page))
	}
	total := 0
	for first := rr.start; first <= last; first += readBatch {
		entries, err := h.Read(ctx, first, min(first+readBatch-1, last))
		if err != nil {
			text(w, http.StatusInternalServerError, err.Error())
			return
		}
		for _, e := range entries {
			if total += len(e.Payload); total > maxReadBytes {
				text(w, http.StatusInternalServerError, fmt.Sprintf(
					"Entries %d to %d hold more than %d bytes: ask for a smaller range", rr.start, last, maxReadBytes))
				return
			}
			put(strconv.FormatInt(e.EntryID, 10), usASCII(e.Payload))
		}
	}
	res := make(obj, 0, len(keys))
	for _, k := range javaHashMapOrder(keys) {
		res = append(res, field{k, out[k]})
	}
	jsonBody(w, res)
}

// usASCII decodes b as Java's new String(b, US_ASCII): a byte above 0x7f
// becomes U+FFFD.
func usASCII(b []byte) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c < 0x80 {
			out = append(out, c)
		} else {
			out = utf8.AppendRune(out, utf8.RuneError)
		}
	}
	return string(out)
}

// javaHashMapOrder returns keys (distinct, in insertion order) in the
// order a java.util.HashMap built by inserting them in that order iterates
// them: by bucket (the String hash spread as HashMap spreads it, masked to
// the table size, which starts at 16 and doubles while the map is over
// three quarters full), and in insertion order within a bucket. A bucket of
// eight or more keys, which Java turns into a tree, is not modelled; the
// entry ids of one page never come near that.
func javaHashMapOrder(keys []string) []string {
	capacity := 16
	for len(keys) > capacity*3/4 {
		capacity *= 2
	}
	type slot struct {
		bucket, pos int
	}
	slots := make([]slot, len(keys))
	for i, k := range keys {
		h := javaStringHash(k)
		h ^= int32(uint32(h) >> 16)
		slots[i] = slot{int(uint32(h) & uint32(capacity-1)), i}
	}
	sort.SliceStable(slots, func(i, j int) bool { return slots[i].bucket < slots[j].bucket })
	out := make([]string, len(keys))
	for i, s := range slots {
		out[i] = keys[s.pos]
	}
	return out
}

// javaStringHash is Java's String.hashCode over the UTF-16 code units.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xd800+(r>>10))
			h = 31*h + int32(0xdc00+(r&0x3ff))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}
