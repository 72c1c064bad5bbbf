package httpadmin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// The bookie's operator endpoints beyond gc: compaction suspension,
// read-only mode, journal marks, files on disk, the cookie check, and the
// entry location index's compaction (docs/bookie-http.md).

// internalError is what BookKeeper's server (vert.x) answers when a
// service throws: a body its service did not expect (not JSON, a value of
// the wrong type) ends there.
func internalError(w http.ResponseWriter) {
	text(w, http.StatusInternalServerError, "Internal Server Error")
}

// jsonObject reads the body as a JSON object. present is false for an
// empty body (BookKeeper's server hands its services a null body then).
func jsonObject(r *http.Request) (kv map[string]any, present bool, err error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, true, err
	}
	if len(body) == 0 {
		return nil, false, nil
	}
	if err := json.Unmarshal(body, &kv); err != nil {
		return nil, true, err
	}
	if kv == nil {
		return nil, true, errors.New("the body is not a JSON object")
	}
	return kv, true, nil
}

// boolField reads an optional JSON boolean as Java's (Boolean) cast of a
// Jackson map value does: absent or null is nil; any other type fails.
func boolField(kv map[string]any, key string) (v *bool, ok bool) {
	switch x := kv[key].(type) {
	case nil:
		return nil, true
	case bool:
		return &x, true
	}
	return nil, false
}

// serverName is how BookKeeper prints its BookieServer.
func (a *api) serverName() string {
	return "Bookie Server listening on " + a.o.Bookie.AdvertisedAddr() + " with id " + a.o.Bookie.ID()
}

// compactionSwitch is PUT /api/v1/bookie/gc/suspend_compaction and
// resume_compaction: {"<verb>Major": bool, "<verb>Minor": bool}. Suspension
// also answers GET with the current state; resumption does not.
func (a *api) compactionSwitch(suspend bool) http.HandlerFunc {
	verb, Verb, apply := "resume", "Resume", a.o.Bookie.ResumeCompaction
	if suspend {
		verb, Verb, apply = "suspend", "Suspend", a.o.Bookie.SuspendCompaction
	}
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && suspend:
			major, minor := a.o.Bookie.CompactionSuspended()
			jsonBody(w, hashMap(obj{
				{"isMajorGcSuspended", fmt.Sprint(major)},
				{"isMinorGcSuspended", fmt.Sprint(minor)},
			}))
			return
		case r.Method != http.MethodPut:
			text(w, http.StatusNotFound, "Not found method. Should be PUT to "+verb+
				" major or minor compaction, Or GET to get compaction state.")
			return
		}
		kv, present, err := jsonObject(r)
		if !present {
			text(w, http.StatusBadRequest, "Empty request body")
			return
		}
		major, okMajor := boolField(kv, verb+"Major")
		minor, okMinor := boolField(kv, verb+"Minor")
		if err != nil || !okMajor || !okMinor {
			internalError(w)
			return
		}
		if major == nil && minor == nil {
			text(w, http.StatusBadRequest, "No "+verb+"Major or "+verb+"Minor params found")
			return
		}
		out := ""
		if major != nil && *major {
			out = Verb + " majorGC on BookieServer: " + a.serverName()
			apply(true, false)
		}
		if minor != nil && *minor {
			out += ", " + Verb + " minorGC on BookieServer: " + a.serverName()
			apply(false, true)
		}
		jsonBody(w, out)
	}
}

// stateReadOnly is GET and PUT ({"readOnly": bool})
// /api/v1/bookie/state/readonly.
func (a *api) stateReadOnly(w http.ResponseWriter, r *http.Request) {
	b := a.o.Bookie
	switch r.Method {
	case http.MethodGet:
	case http.MethodPut:
		// BookKeeper binds the body to a bean with the one property: any
		// other property, or a body that is not that object, fails there.
		kv, present, err := jsonObject(r)
		want, ok := boolField(kv, "readOnly")
		_, named := kv["readOnly"]
		if !present || err != nil || !ok || len(kv) > 1 || len(kv) == 1 && !named {
			internalError(w)
			return
		}
		ro := want != nil && *want
		switch {
		case b.ReadOnly() && !ro:
			err = b.SetReadOnly(false)
		case !b.ReadOnly() && ro:
			err = b.SetReadOnly(true)
		}
		if errors.Is(err, ErrReadOnlyDisabled) {
			text(w, http.StatusBadRequest, "Bookie is disabled ReadOnly mode, cannot transit to readOnly mode")
			return
		}
		if err != nil {
			text(w, http.StatusInternalServerError, err.Error())
			return
		}
	default:
		text(w, http.StatusNotFound, "Unsupported method. Should be GET or PUT method")
		return
	}
	jsonBody(w, obj{{"readOnly", b.ReadOnly()}})
}

// lastLogMark is GET /api/v1/bookie/last_log_mark: per journal,
// "LastLogMark: Journal Id - <id>(<hex id>.txn)" : "Pos - <offset>".
func (a *api) lastLogMark(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, notGet, http.MethodGet) {
		return
	}
	var out obj
	for _, m := range a.o.Bookie.LastLogMarks() {
		out = append(out, field{fmt.Sprintf("LastLogMark: Journal Id - %d(%x.txn)", m.LogID, m.LogID),
			fmt.Sprintf("Pos - %d", m.Offset)})
	}
	jsonBody(w, hashMap(out))
}

// listDiskFile is GET /api/v1/bookie/list_disk_file[?file_type=journal|
// entrylog|index]: the names of the journal (.txn), entry log (.log) and
// index (.idx) files, each name followed by a tab.
func (a *api) listDiskFile(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, notGet, http.MethodGet) {
		return
	}
	typ := r.URL.Query().Get("file_type")
	all := !slices.ContainsFunc(diskFileKinds, func(k diskFileKind) bool { return k.param == typ })
	var out obj
	for _, k := range diskFileKinds {
		if !all && k.param != typ {
			continue
		}
		names, err := a.o.Bookie.DiskFiles(k.kind, k.ext)
		if err != nil {
			a.o.Logger.Warn("list_disk_file failed", "err", err)
			internalError(w)
			return
		}
		var b strings.Builder
		for _, n := range names {
			b.WriteString(n)
			b.WriteByte('\t')
		}
		out = append(out, field{k.key, b.String()})
	}
	jsonBody(w, hashMap(out))
}

// diskFileKind is one file_type of list_disk_file.
type diskFileKind struct {
	param, key, ext string
	kind            FileKind
}

var diskFileKinds = []diskFileKind{
	{"journal", "journal files", "txn", JournalFiles},
	{"entrylog", "entrylog files", "log", EntryLogFiles},
	{"index", "index files", "idx", IndexFiles},
}

// expandStorage is PUT /api/v1/bookie/expand_storage. BookKeeper checks
// the cookies of the directories in its in-memory configuration, adding
// new empty ones when allowStorageExpansion is on. keeper's configuration
// does not change at run time, so there is never a new directory: it
// checks the cookies as a start does and answers as BookKeeper.
func (a *api) expandStorage(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, notPut, http.MethodPut) {
		return
	}
	ctx, cancel := mdContext(r)
	defer cancel()
	if err := a.o.Bookie.CheckCookies(ctx); err != nil {
		a.o.Logger.Error("cookie check for storage expansion failed", "err", err)
		text(w, http.StatusInternalServerError, "Exception while updating cookie for storage expansion")
		return
	}
	text(w, http.StatusOK, "Success expand storage")
}

// entryLocationCompact is PUT ({"entryLocationRocksDBCompact": bool,
// "entryLocations": "path,..."}) and GET
// /api/v1/bookie/entry_location_compact: keeper's entry location index is
// its pebble index, one per bookie.
func (a *api) entryLocationCompact(w http.ResponseWriter, r *http.Request) {
	b := a.o.Bookie
	path := b.IndexPath()
	switch r.Method {
	case http.MethodGet:
		jsonBody(w, obj{{path, b.IndexCompacting()}})
		return
	case http.MethodPut:
	default:
		text(w, http.StatusMethodNotAllowed, "Not found method. Should be PUT to trigger entry location compact,"+
			" Or GET to get entry location compact state.")
		return
	}
	kv, present, err := jsonObject(r)
	switch {
	case !present:
		text(w, http.StatusBadRequest, "Empty request body")
		return
	case err != nil:
		// BookKeeper's JSON helper's message for a body it cannot read.
		answerJSON(w, http.StatusBadRequest, "Failed to deserialize Object from Json string")
		return
	}
	v, has := kv["entryLocationRocksDBCompact"]
	on, isBool := v.(bool)
	listed, hasLocs := kv["entryLocations"]
	list, isString := listed.(string)
	if has && !isBool || hasLocs && !isString {
		internalError(w) // a null or another type fails BookKeeper's cast
		return
	}
	if !on {
		text(w, http.StatusOK, "Not trigger Entry Location RocksDB compact.")
		return
	}
	if strings.TrimSpace(list) != "" {
		// Java's split, which drops trailing empty strings.
		locs := strings.Split(strings.TrimSpace(list), ",")
		for len(locs) > 0 && locs[len(locs)-1] == "" {
			locs = locs[:len(locs)-1]
		}
		for _, l := range locs {
			if l != path {
				answerJSON(w, http.StatusBadRequest, fmt.Sprintf("Specified trigger compact entryLocations: %s is invalid. "+
					"Bookie entry location RocksDB path: [%s].", list, path))
				return
			}
		}
	}
	if err := b.CompactIndex(); err != nil {
		text(w, http.StatusInternalServerError, err.Error())
		return
	}
	if strings.TrimSpace(list) != "" {
		jsonBody(w, fmt.Sprintf("Triggered entry Location RocksDB: %s compact on bookie:%s.", list, b.ID()))
		return
	}
	jsonBody(w, "Triggered entry Location RocksDB compact on bookie:"+b.ID())
}

// hashMap reorders fields, given in the order a BookKeeper service puts
// them into a java.util.HashMap, as that map iterates them.
func hashMap(fields obj) obj {
	keys := make([]string, len(fields))
	byKey := make(map[string]any, len(fields))
	for i, f := range fields {
		keys[i] = f.key
		byKey[f.key] = f.val
	}
	out := make(obj, 0, len(keys))
	for _, k := range javaHashMapOrder(keys) {
		out = append(out, field{k, byKey[k]})
	}
	return out
}
