package httpadmin

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeBookie stands for a bookie in the tests that need no metadata; one
// request at a time uses it.
type fakeBookie struct {
	running, stopping, ro bool
	highPriority          bool
	free, total           uint64
	diskErr               error
	forced                []([2]bool)
	majorSusp, minorSusp  bool
	forceErr              error
	inForce               bool
	gcStatus              GCStatus
	roDisabled            bool
	marks                 []LogMark
	files                 map[FileKind][]string
	filesErr, cookieErr   error
	indexCompacting       bool
	indexCompactions      int
}

func (f *fakeBookie) ID() string                           { return "bookie-1:3181" }
func (f *fakeBookie) Running() bool                        { return f.running }
func (f *fakeBookie) ShuttingDown() bool                   { return f.stopping }
func (f *fakeBookie) ReadOnly() bool                       { return f.ro }
func (f *fakeBookie) AvailableForHighPriorityWrites() bool { return f.highPriority }
func (f *fakeBookie) DiskSpace() (uint64, uint64, error)   { return f.free, f.total, f.diskErr }
func (f *fakeBookie) InForceGC() bool                      { return f.inForce }
func (f *fakeBookie) CompactionSuspended() (bool, bool)    { return f.majorSusp, f.minorSusp }
func (f *fakeBookie) GCStatus() GCStatus                   { return f.gcStatus }
func (f *fakeBookie) AdvertisedAddr() string               { return "10.0.0.1:3181" }
func (f *fakeBookie) LastLogMarks() []LogMark              { return f.marks }
func (f *fakeBookie) CheckCookies(context.Context) error   { return f.cookieErr }
func (f *fakeBookie) IndexPath() string                    { return "/data/ledgers/current/index" }
func (f *fakeBookie) IndexCompacting() bool                { return f.indexCompacting }
func (f *fakeBookie) CompactIndex() error                  { f.indexCompactions++; return nil }
func (f *fakeBookie) DiskFiles(k FileKind, ext string) ([]string, error) {
	return f.files[k], f.filesErr
}

func (f *fakeBookie) SuspendCompaction(major, minor bool) {
	f.majorSusp, f.minorSusp = f.majorSusp || major, f.minorSusp || minor
}

func (f *fakeBookie) ResumeCompaction(major, minor bool) {
	f.majorSusp, f.minorSusp = f.majorSusp && !major, f.minorSusp && !minor
}

func (f *fakeBookie) SetReadOnly(ro bool) error {
	if ro && f.roDisabled {
		return ErrReadOnlyDisabled
	}
	f.ro = ro
	return nil
}

func (f *fakeBookie) ForceGC(major, minor bool) error {
	if f.forceErr != nil {
		return f.forceErr
	}
	f.forced = append(f.forced, [2]bool{major, minor})
	return nil
}

func do(t *testing.T, h http.Handler, method, target, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, rd))
	return rec.Code, rec.Body.String()
}

func TestEndpointsWithoutMetadata(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "m 1\n") })
	tests := []struct {
		name         string
		bookie       fakeBookie
		method, path string
		body         string
		code         int
		want         string // the whole body
	}{
		{name: "heartbeat", method: "GET", path: "/heartbeat", code: 200, want: "OK\n"},
		{name: "heartbeat PUT", method: "PUT", path: "/heartbeat", code: 200, want: "OK\n"},
		{name: "heartbeat HEAD", method: "HEAD", path: "/heartbeat", code: 405},
		{name: "heartbeat PATCH", method: "PATCH", path: "/heartbeat", code: 405, want: "Method Not Allowed"},
		{name: "unknown path", method: "GET", path: "/api/v1/bookie/nope", code: 404, want: notFoundBody},
		{name: "unknown autorecovery path", method: "GET", path: "/api/v1/autorecovery/nope", code: 404, want: notFoundBody},
		{name: "metrics", method: "GET", path: "/metrics", code: 200, want: "m 1\n"},
		{name: "metrics POST", method: "POST", path: "/metrics", code: 403, want: "POST is forbidden. Should be GET method"},
		{name: "config", method: "GET", path: "/api/v1/config/server_config", code: 200,
			want: "{\n  \"bookiePort\" : \"3181\",\n  \"httpServerEnabled\" : \"true\"\n}"},
		{name: "config trailing slash", method: "GET", path: "/api/v1/config/server_config/", code: 200,
			want: "{\n  \"bookiePort\" : \"3181\",\n  \"httpServerEnabled\" : \"true\"\n}"},
		{name: "config PUT refused", method: "PUT", path: "/api/v1/config/server_config", body: `{"gcWaitTime":"1000","a":1}`,
			code: 403, want: "keeper does not change its configuration at run time; not set: a, gcWaitTime"},
		{name: "config PUT no body", method: "PUT", path: "/api/v1/config/server_config", code: 404,
			want: "Request body not found. should contains k-v pairs"},
		{name: "config PUT bad JSON", method: "PUT", path: "/api/v1/config/server_config", body: "{", code: 400},
		{name: "config DELETE", method: "DELETE", path: "/api/v1/config/server_config", code: 404,
			want: "Request body not found. should contains k-v pairs"},
		{name: "info", bookie: fakeBookie{free: 10, total: 30}, method: "GET", path: "/api/v1/bookie/info", code: 200,
			want: "{\n  \"freeSpace\" : 10,\n  \"totalSpace\" : 30\n}"},
		{name: "info disk error", bookie: fakeBookie{diskErr: errors.New("statfs")}, method: "GET", path: "/api/v1/bookie/info", code: 500},
		{name: "info PUT", method: "PUT", path: "/api/v1/bookie/info", code: 404, want: "Only GET is supported."},
		{name: "state", bookie: fakeBookie{running: true, ro: true, highPriority: true}, method: "GET", path: "/api/v1/bookie/state",
			code: 200, want: "{\n  \"running\" : true,\n  \"readOnly\" : true,\n  \"shuttingDown\" : false,\n  \"availableForHighPriorityWrites\" : true\n}"},
		{name: "state POST", method: "POST", path: "/api/v1/bookie/state", code: 404,
			want: "Only support GET method to retrieve bookie state."},
		{name: "ready", bookie: fakeBookie{running: true}, method: "GET", path: "/api/v1/bookie/is_ready", code: 200, want: "OK"},
		{name: "not ready", method: "GET", path: "/api/v1/bookie/is_ready", code: 503, want: "Bookie is not fully started yet"},
		{name: "stopping", bookie: fakeBookie{running: true, stopping: true}, method: "GET", path: "/api/v1/bookie/is_ready", code: 503,
			want: "Bookie is not fully started yet"},
		{name: "ready PUT", method: "PUT", path: "/api/v1/bookie/is_ready", code: 404, want: "Only support GET method check if bookie is ready."},
		{name: "gc state", bookie: fakeBookie{inForce: true}, method: "GET", path: "/api/v1/bookie/gc", code: 200,
			want: "{\n  \"is_in_force_gc\" : \"true\"\n}"},
		{name: "gc PUT", method: "PUT", path: "/api/v1/bookie/gc", code: 200, want: `"Triggered GC on BookieServer: bookie-1:3181"`},
		{name: "gc PUT refused", bookie: fakeBookie{forceErr: errors.New("no metadata")}, method: "PUT", path: "/api/v1/bookie/gc",
			code: 400, want: "Failed to handle the request, exception: no metadata"},
		{name: "gc PUT bad body", method: "PUT", path: "/api/v1/bookie/gc", body: "[", code: 400},
		{name: "gc DELETE", method: "DELETE", path: "/api/v1/bookie/gc", code: 405,
			want: "Not allowed method. Should be PUT to trigger GC, Or GET to get Force GC state."},
		{name: "gc details", bookie: fakeBookie{gcStatus: GCStatus{ForceCompacting: true, MajorCompacting: true,
			LastMajorCompaction: time.UnixMilli(1544578144944), LastMinorCompaction: time.UnixMilli(1544578144944),
			LastEntryLocationCompaction: time.UnixMilli(1544578000000), MajorCompactions: 1, MinorCompactions: 2}},
			method: "GET", path: "/api/v1/bookie/gc_details", code: 200, want: `[ {
  "forceCompacting" : true,
  "majorCompacting" : true,
  "minorCompacting" : false,
  "lastMajorCompactionTime" : 1544578144944,
  "lastMinorCompactionTime" : 1544578144944,
  "lastEntryLocationCompactionTime" : 1544578000000,
  "majorCompactionCounter" : 1,
  "minorCompactionCounter" : 2,
  "entryLocationCompactionCounter" : 0
} ]`},
		{name: "gc details PUT", method: "PUT", path: "/api/v1/bookie/gc_details", code: 404,
			want: "Only support GET method to retrieve GC details. If you want to trigger gc, send a POST to gc endpoint."},
		{name: "list bookies no metadata", method: "GET", path: "/api/v1/bookie/list_bookies?type=rw", code: 500},
		{name: "list bookies POST", method: "POST", path: "/api/v1/bookie/list_bookies", code: 404, want: "Not found method. Should be GET method"},
		{name: "ledgers POST", method: "POST", path: "/api/v1/ledger/list", code: 404, want: "Not found method. Should be GET method"},
		{name: "ledgers bad page", method: "GET", path: "/api/v1/ledger/list?print_metadata=true&page=x", code: 400, want: "Invalid page: x"},
		{name: "metadata no id", method: "GET", path: "/api/v1/ledger/metadata", code: 400, want: "Missing parameter: ledger_id"},
		{name: "metadata bad id", method: "GET", path: "/api/v1/ledger/metadata?ledger_id=abc", code: 400, want: "Invalid ledger_id: abc"},
		{name: "metadata negative id", method: "GET", path: "/api/v1/ledger/metadata?ledger_id=-2", code: 400, want: "Invalid ledger_id: -2"},
		{name: "metadata PUT", method: "PUT", path: "/api/v1/ledger/metadata?ledger_id=1", code: 404, want: "Not found method. Should be GET method"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := Handler(Options{Bookie: &tc.bookie, Metrics: metrics,
				Properties: map[string]string{"httpServerEnabled": "true", "bookiePort": "3181"}})
			code, body := do(t, h, tc.method, tc.path, tc.body)
			if code != tc.code {
				t.Fatalf("%s %s: code %d, want %d (body %q)", tc.method, tc.path, code, tc.code, body)
			}
			if tc.want != "" && body != tc.want {
				t.Fatalf("%s %s: body %q, want %q", tc.method, tc.path, body, tc.want)
			}
		})
	}
}

func TestForceGCFlags(t *testing.T) {
	tests := []struct {
		name                 string
		majorSusp, minorSusp bool
		body                 string
		want                 [2]bool
	}{
		{name: "no body", body: "", want: [2]bool{true, true}},
		{name: "no body, major suspended", majorSusp: true, body: "", want: [2]bool{true, true}},
		{name: "empty object", body: "{}", want: [2]bool{true, true}},
		{name: "empty object, major suspended", majorSusp: true, body: "{}", want: [2]bool{false, true}},
		{name: "minor only", body: `{"forceMajor":"false","forceMinor":"true"}`, want: [2]bool{false, true}},
		{name: "booleans", body: `{"forceMajor":true,"forceMinor":false}`, want: [2]bool{true, false}},
		{name: "any case", body: `{"forceMajor":"TRUE"}`, want: [2]bool{true, true}},
		{name: "not true", body: `{"forceMajor":"yes","forceMinor":1}`, want: [2]bool{false, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBookie{majorSusp: tc.majorSusp, minorSusp: tc.minorSusp}
			if code, body := do(t, Handler(Options{Bookie: b}), "PUT", "/api/v1/bookie/gc", tc.body); code != 200 {
				t.Fatalf("code %d: %s", code, body)
			}
			if len(b.forced) != 1 || b.forced[0] != tc.want {
				t.Fatalf("forced %v, want [%v]", b.forced, tc.want)
			}
		})
	}
}

// TestBodyLimit: a body past MaxBodyBytes is refused, not read whole.
func TestBodyLimit(t *testing.T) {
	h := Handler(Options{Bookie: &fakeBookie{}})
	code, _ := do(t, h, "PUT", "/api/v1/config/server_config", `{"k":"`+strings.Repeat("x", MaxBodyBytes)+`"}`)
	if code != 400 {
		t.Fatalf("code %d, want 400", code)
	}
}

// TestInFlightLimit: past maxInFlight requests at once the rest get 503.
func TestInFlightLimit(t *testing.T) {
	block := make(chan struct{})
	entered := make(chan struct{}, maxInFlight)
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-block
	})
	h := Handler(Options{Bookie: &fakeBookie{}, Metrics: metrics})
	var wg sync.WaitGroup
	for range maxInFlight {
		wg.Go(func() { do(t, h, "GET", "/metrics", "") })
	}
	for range maxInFlight {
		<-entered
	}
	if code, _ := do(t, h, "GET", "/heartbeat", ""); code != http.StatusServiceUnavailable {
		t.Errorf("code %d, want 503", code)
	}
	close(block)
	wg.Wait()
	if code, _ := do(t, h, "GET", "/heartbeat", ""); code != 200 {
		t.Errorf("after: code %d, want 200", code)
	}
}

func TestPretty(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{obj{}, "{ }"},
		{[]any{}, "[ ]"},
		{"a<b>&\"", `"a<b>&\""`},
		{obj{{"a", nil}, {"b", []any{obj{{"id", "x"}}, int64(-1)}}},
			"{\n  \"a\" : null,\n  \"b\" : [ {\n    \"id\" : \"x\"\n  }, -1 ]\n}"},
	}
	for _, tc := range tests {
		if got := string(pretty(tc.v)); got != tc.want {
			t.Errorf("pretty(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// FuzzHandler: no request makes the API panic or answer outside its codes.
func FuzzHandler(f *testing.F) {
	f.Add("PUT", "/api/v1/bookie/gc", `{"forceMajor":"true"}`)
	f.Add("GET", "/api/v1/ledger/metadata?ledger_id=1", "")
	f.Add("PUT", "/api/v1/config/server_config", `{"a":{"b":[1]}}`)
	f.Add("PUT", "/api/v1/autorecovery/bookie", `{"bookie_src":["b:1"],"delete_cookie":"TRUE"}`)
	f.Add("PUT", "/api/v1/autorecovery/decommission", `{"bookie_src":"b:1"}`)
	f.Add("PUT", "/api/v1/autorecovery/lost_bookie_recovery_delay", `{"delay_seconds":1e3}`)
	f.Add("PUT", "/api/v1/autorecovery/status?enabled=false", "")
	f.Add("PUT", "/api/v1/bookie/gc/suspend_compaction", `{"suspendMajor":true,"suspendMinor":null}`)
	f.Add("PUT", "/api/v1/bookie/state/readonly", `{"readOnly":true}`)
	f.Add("PUT", "/api/v1/bookie/entry_location_compact", `{"entryLocationRocksDBCompact":true,"entryLocations":"a,b"}`)
	f.Add("GET", "/api/v1/bookie/list_disk_file?file_type=journal", "")
	f.Add("GET", "/api/v1/ledger/read?ledger_id=1&page=3&start_entry_id=2500&end_entry_id=-1", "")
	f.Fuzz(func(t *testing.T, method, target, body string) {
		req, err := http.NewRequest(method, "http://h"+target, strings.NewReader(body))
		if err != nil || !strings.HasPrefix(target, "/") {
			return
		}
		rec := httptest.NewRecorder()
		h := Handler(Options{Bookie: &fakeBookie{}})
		defer h.Close()
		h.ServeHTTP(rec, req)
		if rec.Code < 200 || rec.Code > 503 {
			t.Fatalf("%s %s: code %d", method, target, rec.Code)
		}
	})
}
