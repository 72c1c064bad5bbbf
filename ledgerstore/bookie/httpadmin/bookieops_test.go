package httpadmin

import (
	"errors"
	"testing"
)

// TestBookieOperations: each operator endpoint's answers (methods, bodies,
// parameters, errors and JSON) as BookKeeper's services give them, over a
// fake bookie, and what each asked of the bookie.
func TestBookieOperations(t *testing.T) {
	const (
		bk       = "/api/v1/bookie/"
		server   = "Bookie Server listening on 10.0.0.1:3181 with id bookie-1:3181"
		ise      = "Internal Server Error"
		idx      = "/data/ledgers/current/index"
		notSusp  = "Not found method. Should be PUT to suspend major or minor compaction, Or GET to get compaction state."
		notRes   = "Not found method. Should be PUT to resume major or minor compaction, Or GET to get compaction state."
		notLocOp = "Not found method. Should be PUT to trigger entry location compact, Or GET to get entry location compact state."
	)
	files := map[FileKind][]string{JournalFiles: {"1.txn", "2.txn"}, EntryLogFiles: {"0.log"}}
	tests := []struct {
		name                 string
		bookie               fakeBookie
		method, target, body string
		code                 int
		want                 string
		check                func(f *fakeBookie) bool // what the bookie was asked, if not nil
	}{
		{name: "suspend state", bookie: fakeBookie{majorSusp: true}, method: "GET", target: bk + "gc/suspend_compaction",
			code: 200, want: "{\n  \"isMinorGcSuspended\" : \"false\",\n  \"isMajorGcSuspended\" : \"true\"\n}"},
		{name: "suspend both", method: "PUT", target: bk + "gc/suspend_compaction",
			body: `{"suspendMajor":true,"suspendMinor":true}`, code: 200,
			want:  `"Suspend majorGC on BookieServer: ` + server + `, Suspend minorGC on BookieServer: ` + server + `"`,
			check: func(f *fakeBookie) bool { return f.majorSusp && f.minorSusp }},
		{name: "suspend minor", method: "PUT", target: bk + "gc/suspend_compaction", body: `{"suspendMinor":true}`, code: 200,
			want:  `", Suspend minorGC on BookieServer: ` + server + `"`,
			check: func(f *fakeBookie) bool { return !f.majorSusp && f.minorSusp }},
		{name: "suspend false", method: "PUT", target: bk + "gc/suspend_compaction", body: `{"suspendMajor":false}`, code: 200,
			want: `""`, check: func(f *fakeBookie) bool { return !f.majorSusp && !f.minorSusp }},
		{name: "suspend no flags", method: "PUT", target: bk + "gc/suspend_compaction", body: `{"x":1}`, code: 400,
			want: "No suspendMajor or suspendMinor params found"},
		{name: "suspend no body", method: "PUT", target: bk + "gc/suspend_compaction", code: 400, want: "Empty request body"},
		{name: "suspend not JSON", method: "PUT", target: bk + "gc/suspend_compaction", body: "{", code: 500, want: ise},
		{name: "suspend string flag", method: "PUT", target: bk + "gc/suspend_compaction", body: `{"suspendMajor":"true"}`,
			code: 500, want: ise},
		{name: "suspend DELETE", method: "DELETE", target: bk + "gc/suspend_compaction", code: 404, want: notSusp},
		{name: "resume major", bookie: fakeBookie{majorSusp: true, minorSusp: true}, method: "PUT",
			target: bk + "gc/resume_compaction", body: `{"resumeMajor":true}`, code: 200,
			want:  `"Resume majorGC on BookieServer: ` + server + `"`,
			check: func(f *fakeBookie) bool { return !f.majorSusp && f.minorSusp }},
		{name: "resume no flags", method: "PUT", target: bk + "gc/resume_compaction", body: `{"suspendMajor":true}`, code: 400,
			want: "No resumeMajor or resumeMinor params found"},
		{name: "resume GET", method: "GET", target: bk + "gc/resume_compaction", code: 404, want: notRes},

		{name: "readonly state", bookie: fakeBookie{ro: true}, method: "GET", target: bk + "state/readonly", code: 200,
			want: "{\n  \"readOnly\" : true\n}"},
		{name: "to readonly", method: "PUT", target: bk + "state/readonly", body: `{"readOnly":true}`, code: 200,
			want: "{\n  \"readOnly\" : true\n}", check: func(f *fakeBookie) bool { return f.ro }},
		{name: "to writable", bookie: fakeBookie{ro: true}, method: "PUT", target: bk + "state/readonly", body: `{"readOnly":false}`,
			code: 200, want: "{\n  \"readOnly\" : false\n}", check: func(f *fakeBookie) bool { return !f.ro }},
		{name: "empty object is writable", bookie: fakeBookie{ro: true}, method: "PUT", target: bk + "state/readonly", body: `{}`,
			code: 200, want: "{\n  \"readOnly\" : false\n}"},
		{name: "readonly disabled", bookie: fakeBookie{roDisabled: true}, method: "PUT", target: bk + "state/readonly",
			body: `{"readOnly":true}`, code: 400, want: "Bookie is disabled ReadOnly mode, cannot transit to readOnly mode"},
		{name: "readonly no body", method: "PUT", target: bk + "state/readonly", code: 500, want: ise},
		{name: "readonly unknown property", method: "PUT", target: bk + "state/readonly", body: `{"readonly":true}`,
			code: 500, want: ise},
		{name: "readonly POST", method: "POST", target: bk + "state/readonly", code: 404,
			want: "Unsupported method. Should be GET or PUT method"},

		{name: "last log mark", bookie: fakeBookie{marks: []LogMark{{1, 512}, {255, 0}}}, method: "GET",
			target: bk + "last_log_mark", code: 200, want: "{\n  \"LastLogMark: Journal Id - 255(ff.txn)\" : \"Pos - 0\",\n" +
				"  \"LastLogMark: Journal Id - 1(1.txn)\" : \"Pos - 512\"\n}"},
		{name: "last log mark PUT", method: "PUT", target: bk + "last_log_mark", code: 404, want: notGet},

		{name: "disk files", bookie: fakeBookie{files: files}, method: "GET", target: bk + "list_disk_file", code: 200,
			want: "{\n  \"index files\" : \"\",\n  \"journal files\" : \"1.txn\\t2.txn\\t\",\n  \"entrylog files\" : \"0.log\\t\"\n}"},
		{name: "disk files journal", bookie: fakeBookie{files: files}, method: "GET", target: bk + "list_disk_file?file_type=journal",
			code: 200, want: "{\n  \"journal files\" : \"1.txn\\t2.txn\\t\"\n}"},
		{name: "disk files other type", bookie: fakeBookie{files: files}, method: "GET", target: bk + "list_disk_file?file_type=x",
			code: 200, want: "{\n  \"index files\" : \"\",\n  \"journal files\" : \"1.txn\\t2.txn\\t\",\n  \"entrylog files\" : \"0.log\\t\"\n}"},
		{name: "disk files fail", bookie: fakeBookie{filesErr: errors.New("EIO")}, method: "GET", target: bk + "list_disk_file",
			code: 500, want: ise},
		{name: "disk files POST", method: "POST", target: bk + "list_disk_file", code: 404, want: notGet},

		{name: "expand", method: "PUT", target: bk + "expand_storage", code: 200, want: "Success expand storage"},
		{name: "expand bad cookie", bookie: fakeBookie{cookieErr: errors.New("swapped disk")}, method: "PUT",
			target: bk + "expand_storage", code: 500, want: "Exception while updating cookie for storage expansion"},
		{name: "expand GET", method: "GET", target: bk + "expand_storage", code: 404, want: notPut},

		{name: "location state", bookie: fakeBookie{indexCompacting: true}, method: "GET", target: bk + "entry_location_compact",
			code: 200, want: "{\n  \"" + idx + "\" : true\n}"},
		{name: "location compact", method: "PUT", target: bk + "entry_location_compact", body: `{"entryLocationRocksDBCompact":true}`,
			code: 200, want: `"Triggered entry Location RocksDB compact on bookie:bookie-1:3181"`,
			check: func(f *fakeBookie) bool { return f.indexCompactions == 1 }},
		{name: "location compact path", method: "PUT", target: bk + "entry_location_compact",
			body: `{"entryLocationRocksDBCompact":true,"entryLocations":" ` + idx + `"}`, code: 200,
			want:  `"Triggered entry Location RocksDB:  ` + idx + ` compact on bookie:bookie-1:3181."`,
			check: func(f *fakeBookie) bool { return f.indexCompactions == 1 }},
		{name: "location compact other path", method: "PUT", target: bk + "entry_location_compact",
			body: `{"entryLocationRocksDBCompact":true,"entryLocations":"` + idx + `,/x"}`, code: 400,
			want: `"Specified trigger compact entryLocations: ` + idx + `,/x is invalid. Bookie entry location RocksDB path: [` +
				idx + `]."`, check: func(f *fakeBookie) bool { return f.indexCompactions == 0 }},
		{name: "location no compact", method: "PUT", target: bk + "entry_location_compact", body: `{"entryLocations":"/x"}`,
			code: 200, want: "Not trigger Entry Location RocksDB compact.",
			check: func(f *fakeBookie) bool { return f.indexCompactions == 0 }},
		{name: "location no body", method: "PUT", target: bk + "entry_location_compact", code: 400, want: "Empty request body"},
		{name: "location not JSON", method: "PUT", target: bk + "entry_location_compact", body: "[1]", code: 400,
			want: `"Failed to deserialize Object from Json string"`},
		{name: "location null flag", method: "PUT", target: bk + "entry_location_compact",
			body: `{"entryLocationRocksDBCompact":null}`, code: 500, want: ise},
		{name: "location DELETE", method: "DELETE", target: bk + "entry_location_compact", code: 405, want: notLocOp},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.bookie
			h := Handler(Options{Bookie: &f})
			defer h.Close()
			code, body := do(t, h, tc.method, tc.target, tc.body)
			if code != tc.code || tc.want != "" && body != tc.want {
				t.Fatalf("%s %s %q: %d %q, want %d %q", tc.method, tc.target, tc.body, code, body, tc.code, tc.want)
			}
			if tc.check != nil && !tc.check(&f) {
				t.Fatalf("%s %s %q: the bookie was left %+v", tc.method, tc.target, tc.body, f)
			}
		})
	}
}

// TestClusterEndpointsRefuse: cluster_info, list_bookie_info and sanity
// refuse other methods as BookKeeper does, and answer 500 on a bookie
// without the metadata store or ledger client they need.
func TestClusterEndpointsRefuse(t *testing.T) {
	const bk = "/api/v1/bookie/"
	tests := []struct {
		method, target string
		code           int
		want           string
	}{
		{"PUT", bk + "cluster_info", 404, "Only GET is supported."},
		{"GET", bk + "cluster_info", 500, "The bookie runs without a metadata store"},
		{"POST", bk + "list_bookie_info", 404, notGet},
		{"GET", bk + "list_bookie_info", 500, "The bookie runs without a metadata store"},
		{"DELETE", bk + "sanity", 404, "Only support GET method to retrieve bookie sanity state."},
		{"GET", bk + "sanity", 500, "The bookie runs without a ledger client"},
	}
	h := Handler(Options{Bookie: &fakeBookie{}})
	defer h.Close()
	for _, tc := range tests {
		if code, body := do(t, h, tc.method, tc.target, ""); code != tc.code || body != tc.want {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.target, code, body, tc.code, tc.want)
		}
	}
}

// TestReadableBytes: list_bookie_info's sizes, as BookKeeper prints them
// (powers of 1000, three decimals at most, cut).
func TestReadableBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0"},
		{999, "999"},
		{1000, "1000(1KB)"},
		{1999, "1999(1.999KB)"},
		{1234567, "1234567(1.234MB)"},
		{1073741824, "1073741824(1.073GB)"},
		{2_500_000_000_000, "2500000000000(2.5TB)"},
		{7_000_000_000_000_000, "7000000000000000(7000TB)"},
	}
	for _, tc := range tests {
		if got := readableBytes(tc.n); got != tc.want {
			t.Errorf("readableBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
