package httpadmin

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"

	"keeper/ledgerstore/ledger"
)

// TestRecoveryEndpointsRefuse: the answers the autorecovery and ledger
// endpoints give before they touch the metadata store, as BookKeeper's
// services give them, and 500 on a bookie without a store.
func TestRecoveryEndpointsRefuse(t *testing.T) {
	const (
		noPut   = "Not found method. Should be PUT method"
		noGet   = "Not found method. Should be GET method"
		noStore = "The bookie runs without a metadata store"
	)
	tests := []struct {
		method, target, body string
		code                 int
		want                 string
	}{
		{"PUT", "/api/v1/autorecovery/bookie", "", 404, "No request body provide."},
		{"GET", "/api/v1/autorecovery/bookie", "", 404, "No request body provide."},
		{"PUT", "/api/v1/autorecovery/bookie", "{", 404, "ERROR parameters: unexpected end of JSON input"},
		{"GET", "/api/v1/autorecovery/bookie", `{"bookie_src":["b:1"]}`, 404, noPut},
		{"PUT", "/api/v1/autorecovery/bookie", `{"bookie_src":[]}`, 404, noPut},
		{"PUT", "/api/v1/autorecovery/bookie", `{"delete_cookie":true}`, 404, noPut},
		{"PUT", "/api/v1/autorecovery/bookie/", `{"bookie_src":["bad id"]}`, 400, ""},
		{"PUT", "/api/v1/autorecovery/bookie", `{"bookie_src":["b:1"]}`, 500, noStore},
		{"GET", "/api/v1/autorecovery/decommission", "", 404, noPut},
		{"PUT", "/api/v1/autorecovery/decommission", "", 404, "Null request body for DecommissionService."},
		{"PUT", "/api/v1/autorecovery/decommission", "[1]", 400, ""},
		{"PUT", "/api/v1/autorecovery/decommission", `{"delete_cookie":"true"}`, 404, "Request body not contains bookie_src."},
		{"PUT", "/api/v1/autorecovery/decommission", `{"bookie_src":7}`, 404,
			"Exception when send decommission command.bookie_src 7 is not a string"},
		{"PUT", "/api/v1/autorecovery/decommission", `{"bookie_src":"x y"}`, 404, "Exception when send decommission command."},
		{"PUT", "/api/v1/autorecovery/decommission", `{"bookie_src":"b:1"}`, 500, noStore},
		{"PUT", "/api/v1/autorecovery/list_under_replicated_ledger", "", 404, noGet},
		{"GET", "/api/v1/autorecovery/list_under_replicated_ledger", "", 500, noStore},
		{"POST", "/api/v1/autorecovery/who_is_auditor", "", 404, noGet},
		{"GET", "/api/v1/autorecovery/who_is_auditor", "", 500, noStore},
		{"GET", "/api/v1/autorecovery/trigger_audit", "", 404, noPut},
		{"PUT", "/api/v1/autorecovery/trigger_audit", "", 500, noStore},
		{"DELETE", "/api/v1/autorecovery/lost_bookie_recovery_delay", "", 404, noPut},
		{"PUT", "/api/v1/autorecovery/lost_bookie_recovery_delay", "", 404, "Null request body for lostBookieRecoveryDelay."},
		{"PUT", "/api/v1/autorecovery/lost_bookie_recovery_delay", `{"delay":1}`, 404,
			"Request body not contains lostBookieRecoveryDelay."},
		{"PUT", "/api/v1/autorecovery/lost_bookie_recovery_delay", `{"delay_seconds":-1}`, 400, ""},
		{"PUT", "/api/v1/autorecovery/lost_bookie_recovery_delay", `{"delay_seconds":"5"}`, 400, ""},
		{"PUT", "/api/v1/autorecovery/lost_bookie_recovery_delay", `{"delay_seconds":2147483648}`, 400, ""},
		{"PUT", "/api/v1/autorecovery/lost_bookie_recovery_delay", `{"delay_seconds":5}`, 500, noStore},
		{"GET", "/api/v1/autorecovery/lost_bookie_recovery_delay", "", 500, noStore},
		{"POST", "/api/v1/autorecovery/status", "", 404, "Not found method. Should be GET or PUT method"},
		{"PUT", "/api/v1/autorecovery/status?x=1", "", 400, "Param 'enabled' not found in {x=1}"},
		{"GET", "/api/v1/autorecovery/status", "", 500, noStore},
		{"GET", "/api/v1/ledger/delete?ledger_id=1", "", 404, "Not found method. Should be DELETE method"},
		{"DELETE", "/api/v1/ledger/delete", "", 404, "Not ledger found. Should provide ledger_id=<id>"},
		{"DELETE", "/api/v1/ledger/delete?ledger_id=x", "", 400, "Invalid ledger_id: x"},
		{"DELETE", "/api/v1/ledger/delete?ledger_id=1", "", 500, noStore},
		{"PUT", "/api/v1/ledger/read?ledger_id=1", "", 404, "Not found method. Should be GET method, with ledger_id provided"},
		{"GET", "/api/v1/ledger/read", "", 404, "Not found method. Should be GET method, with ledger_id provided"},
		{"GET", "/api/v1/ledger/read?ledger_id=-1", "", 400, "Invalid ledger_id: -1"},
		{"GET", "/api/v1/ledger/read?ledger_id=1&page=x", "", 400, "Invalid page: x"},
		{"GET", "/api/v1/ledger/read?ledger_id=1&start_entry_id=5&end_entry_id=3", "", 500,
			"parameter for start_entry_id: 5 and end_entry_id: 3 conflict with page=-1"},
		{"GET", "/api/v1/ledger/read?ledger_id=1", "", 500, noStore},
	}
	h := Handler(Options{Bookie: &fakeBookie{}})
	defer h.Close()
	for _, tc := range tests {
		code, body := do(t, h, tc.method, tc.target, tc.body)
		if code != tc.code || !strings.HasPrefix(body, tc.want) {
			t.Errorf("%s %s %q: %d %q, want %d %q", tc.method, tc.target, tc.body, code, body, tc.code, tc.want)
		}
	}
}

func TestParseReadRange(t *testing.T) {
	tests := []struct {
		query      string
		start, end int64
		page, code int
	}{
		{"", 0, -1, 0, 200},
		{"start_entry_id=3", 3, -1, 0, 200},
		{"start_entry_id=3&end_entry_id=3", 3, 3, 0, 200},
		{"end_entry_id=-1", 0, -1, 0, 200},
		{"end_entry_id=-2", 0, -1, 0, 400},
		{"start_entry_id=-1", 0, -1, 0, 400},
		{"page=1", 0, 999, 1, 200},
		{"page=2", 1000, 1999, 2, 200},
		{"page=0", 0, -1, 0, 200},
		{"page=2&start_entry_id=1500&end_entry_id=1600", 1500, 1600, 2, 200},
		{"page=2&start_entry_id=5&end_entry_id=5000", 1000, 1999, 2, 200},
		{"page=1&start_entry_id=1500", 1500, 999, 1, 500},
	}
	for _, tc := range tests {
		q := map[string][]string{}
		for _, kv := range strings.Split(tc.query, "&") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				q[k] = []string{v}
			}
		}
		rr, code, msg := parseReadRange(q)
		if code != tc.code || code == 200 && (rr.start != tc.start || rr.end != tc.end || rr.page != tc.page) {
			t.Errorf("%q: %+v %d %q, want %d..%d page %d, %d", tc.query, rr, code, msg, tc.start, tc.end, tc.page, tc.code)
		}
	}
}

// TestJavaHashMapOrder compares with what OpenJDK 17's HashMap printed
// for the same insertions (keySet order, joined with commas).
func TestJavaHashMapOrder(t *testing.T) {
	seq := func(from, to int, page bool) []string {
		var keys []string
		if page {
			keys = append(keys, "Entries for page: ")
		}
		for i := from; i <= to; i++ {
			keys = append(keys, strconv.Itoa(i))
		}
		return keys
	}
	join := func(keys []string) string { return strings.Join(keys, ",") + "," }
	tests := []struct {
		keys []string
		want string
	}{
		{seq(0, 12, false), "11,12,0,1,2,3,4,5,6,7,8,9,10,"},
		{seq(0, 25, false), "22,23,24,25,10,11,12,13,14,15,16,17,18,19,0,1,2,3,4,5,6,7,8,9,20,21,"},
		{seq(1000, 1020, true), "1000,1011,1010,1020,Entries for page: ,1008,1019,1007,1018,1006,1017,1005,1016," +
			"1004,1015,1003,1014,1002,1013,1001,1012,1009,"},
	}
	for _, tc := range tests {
		if got := join(javaHashMapOrder(tc.keys)); got != tc.want {
			t.Errorf("order of %d keys:\n%s\nwant\n%s", len(tc.keys), got, tc.want)
		}
	}
	// Whole pages: the MD5 of Java's line (with its newline).
	pages := []struct {
		keys []string
		md5  string
	}{
		{seq(0, 999, false), "08fba6c88e0e9cb82c21fa90b238b3c3"},
		{seq(1000, 1999, true), "5b8aaab51a1e4aa0af5d7bc83cc44212"},
	}
	for _, p := range pages {
		sum := md5.Sum([]byte(join(javaHashMapOrder(p.keys)) + "\n"))
		if got := hex.EncodeToString(sum[:]); got != p.md5 {
			t.Errorf("order of %s..: md5 %s, want %s", p.keys[0], got, p.md5)
		}
	}
}

func TestUSASCII(t *testing.T) {
	if got := usASCII([]byte("ab\x00\x7f\x80\xffc")); got != "ab\x00\x7f\ufffd\ufffdc" {
		t.Fatalf("usASCII = %q", got)
	}
	// String.hashCode from OpenJDK 17, over UTF-16 (a surrogate pair).
	for s, want := range map[string]int32{"Entries for page: ": -271798564, "\U0001F600x": 54959989, "": 0} {
		if got := javaStringHash(s); got != want {
			t.Errorf("javaStringHash(%q) = %d, want %d", s, got, want)
		}
	}
}

// fakeRecovery stands for autorecovery.Operator; err, if set, fails every
// call.
type fakeRecovery struct {
	err      error
	ids      []int64
	missing  [][]string
	auditor  string
	delay    int
	enabled  bool
	filter   [2]string
	triggers int
}

func (f *fakeRecovery) UnderReplicated(_ context.Context, inc, exc string) ([]int64, [][]string, error) {
	f.filter = [2]string{inc, exc}
	return f.ids, f.missing, f.err
}
func (f *fakeRecovery) CurrentAuditor(context.Context) (string, bool, error) {
	return f.auditor, f.auditor != "", f.err
}
func (f *fakeRecovery) TriggerAudit(context.Context) error { f.triggers++; return f.err }
func (f *fakeRecovery) StoredDelay(context.Context) (int, error) {
	return f.delay, f.err
}
func (f *fakeRecovery) SetDelay(_ context.Context, s int) error {
	if f.err == nil {
		f.delay = s
	}
	return f.err
}
func (f *fakeRecovery) ReplicationEnabled(context.Context) (bool, error) { return f.enabled, f.err }
func (f *fakeRecovery) SetReplicationEnabled(_ context.Context, on bool) error {
	if f.err == nil {
		f.enabled = on
	}
	return f.err
}
func (f *fakeRecovery) RecoverBookies(context.Context, []ledger.BookieID, bool) error {
	return f.err
}

// TestRecoveryEndpoints: each autorecovery endpoint's answer, success and
// failure, over a fake backend.
func TestRecoveryEndpoints(t *testing.T) {
	const ar = "/api/v1/autorecovery/"
	failing := errors.New("zk down")
	tests := []struct {
		name                 string
		rec                  fakeRecovery
		method, target, body string
		code                 int
		want                 string
	}{
		{"list", fakeRecovery{ids: []int64{3, 40}, missing: [][]string{{"a:1"}, {"a:1", "b:2"}}}, "GET",
			ar + "list_under_replicated_ledger", "", 200, "[ 3, 40 ]"},
		{"list with replicas", fakeRecovery{ids: []int64{3, 40}, missing: [][]string{{"a:1"}, {"a:1", "b:2"}}}, "GET",
			ar + "list_under_replicated_ledger?printmissingreplica=", "", 200,
			"{\n  \"3\" : [ \"a:1\" ],\n  \"40\" : [ \"a:1\", \"b:2\" ]\n}"},
		{"list none", fakeRecovery{}, "GET", ar + "list_under_replicated_ledger", "", 404, "No under replicated ledgers found"},
		{"list fails", fakeRecovery{err: failing}, "GET", ar + "list_under_replicated_ledger", "", 404, "Exception when get.zk down"},
		{"auditor", fakeRecovery{auditor: "bk:3181"}, "GET", ar + "who_is_auditor", "", 200, "Auditor: bk:3181"},
		{"no auditor", fakeRecovery{}, "GET", ar + "who_is_auditor", "", 404, "No auditor elected"},
		{"auditor fails", fakeRecovery{err: failing}, "GET", ar + "who_is_auditor", "", 404, "Exception when get.zk down"},
		{"trigger", fakeRecovery{}, "PUT", ar + "trigger_audit", "", 200, "Success trigger audit."},
		{"trigger fails", fakeRecovery{err: failing}, "PUT", ar + "trigger_audit", "", 404, "Exception when do operation.zk down"},
		{"delay", fakeRecovery{delay: 30}, "GET", ar + "lost_bookie_recovery_delay", "", 200, "lostBookieRecoveryDelay value: 30"},
		{"delay fails", fakeRecovery{err: failing}, "GET", ar + "lost_bookie_recovery_delay", "", 404,
			"Exception when get lostBookieRecoveryDelay.zk down"},
		{"set delay", fakeRecovery{}, "PUT", ar + "lost_bookie_recovery_delay", `{"delay_seconds" : 0}`, 200,
			"Success set lostBookieRecoveryDelay to 0"},
		{"set delay fails", fakeRecovery{err: failing}, "PUT", ar + "lost_bookie_recovery_delay", `{"delay_seconds":1}`, 500, "zk down"},
		{"status", fakeRecovery{enabled: true}, "GET", ar + "status", "", 200, "{\n  \"enabled\" : true\n}"},
		{"disable", fakeRecovery{enabled: true}, "PUT", ar + "status?enabled=FALSE", "", 200, "{\n  \"enabled\" : false\n}"},
		{"enable", fakeRecovery{}, "PUT", ar + "status?enabled=True", "", 200, "{\n  \"enabled\" : true\n}"},
		{"status fails", fakeRecovery{err: failing}, "GET", ar + "status", "", 500, "zk down"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := Handler(Options{Bookie: &fakeBookie{}, Recovery: &tc.rec})
			defer h.Close()
			if code, body := do(t, h, tc.method, tc.target, tc.body); code != tc.code || body != tc.want {
				t.Fatalf("%s %s: %d %q, want %d %q", tc.method, tc.target, code, body, tc.code, tc.want)
			}
		})
	}
	rec := &fakeRecovery{}
	h := Handler(Options{Bookie: &fakeBookie{}, Recovery: rec})
	defer h.Close()
	do(t, h, "GET", ar+"list_under_replicated_ledger?missingreplica=a:1&excludingmissingreplica=b:2", "")
	if rec.filter != [2]string{"a:1", "b:2"} {
		t.Fatalf("filter passed on: %q", rec.filter)
	}
}

// TestOneJobAtATime: a second recovery is refused while one runs; Close
// cancels the running one and waits for it; nothing starts after Close.
func TestOneJobAtATime(t *testing.T) {
	h := Handler(Options{Bookie: &fakeBookie{}})
	started, ended := make(chan struct{}), make(chan struct{})
	if err := h.startJob("first", func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		close(ended)
		return ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := h.startJob("second", func(context.Context) error { return nil }); !errors.Is(err, errBusy) ||
		!strings.Contains(err.Error(), "first") {
		t.Fatalf("second job: %v", err)
	}
	h.Close()
	select {
	case <-ended:
	default:
		t.Fatal("Close returned before the job ended")
	}
	if err := h.startJob("third", func(context.Context) error { return nil }); !errors.Is(err, errClosed) {
		t.Fatalf("job after Close: %v", err)
	}
}
