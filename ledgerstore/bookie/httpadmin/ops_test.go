package httpadmin_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestBookieHTTPOperations drives the operator endpoints against a running
// bookie and checks that each did to the bookie what it says.
func TestBookieHTTPOperations(t *testing.T) {
	w := newWorldN(t, 2)
	const bk = "/api/v1/bookie/"
	server := fmt.Sprintf("Bookie Server listening on %s with id %s", w.b.AdvertisedAddr(), w.b.ID())

	// Compaction suspension, seen by GET and by the bookie's own report.
	w.expect(t, "PUT", bk+"gc/suspend_compaction", `{"suspendMajor":true}`, 200,
		fmt.Sprintf("%q", "Suspend majorGC on BookieServer: "+server))
	w.expect(t, "GET", bk+"gc/suspend_compaction", "", 200,
		"{\n  \"isMinorGcSuspended\" : \"false\",\n  \"isMajorGcSuspended\" : \"true\"\n}")
	w.expect(t, "PUT", bk+"gc/resume_compaction", `{"resumeMajor":true,"resumeMinor":true}`, 200,
		fmt.Sprintf("%q", "Resume majorGC on BookieServer: "+server+", Resume minorGC on BookieServer: "+server))
	if major, minor := w.b.CompactionSuspended(); major || minor {
		t.Fatalf("after resume: suspended %v %v", major, minor)
	}

	// The sanity test writes through this bookie (its journal gets a file)
	// and leaves nothing.
	w.expect(t, "GET", bk+"sanity", "", 200, "{\n  \"passed\" : true,\n  \"readOnly\" : false\n}")
	if _, body := w.get(t, "GET", "/api/v1/ledger/list"); body != "{ }" {
		t.Fatalf("ledgers after the sanity test: %s", body)
	}

	// Read-only at an operator's request: the registration moves (and the
	// last sanity test below finds adds refused); back to writable, it
	// moves back.
	w.expect(t, "PUT", bk+"state/readonly", `{"readOnly":true}`, 200, "{\n  \"readOnly\" : true\n}")
	poll(t, "the registration under readonly", func() bool {
		_, body := w.get(t, "GET", bk+"list_bookies?type=ro")
		return strings.Contains(body, w.b.ID())
	})
	w.expect(t, "GET", bk+"state/readonly", "", 200, "{\n  \"readOnly\" : true\n}")
	w.expect(t, "PUT", bk+"state/readonly", `{"readOnly":false}`, 200, "{\n  \"readOnly\" : false\n}")
	poll(t, "the registration back among writable bookies", func() bool {
		_, body := w.get(t, "GET", bk+"list_bookies?type=ro")
		return !strings.Contains(body, w.b.ID())
	})

	// The journal's persisted mark, named as BookKeeper names it.
	_, body := w.get(t, "GET", bk+"last_log_mark")
	var marks map[string]string
	if err := json.Unmarshal([]byte(body), &marks); err != nil || len(marks) != 1 {
		t.Fatalf("last_log_mark %q: %v", body, err)
	}
	markKey := regexp.MustCompile(`^LastLogMark: Journal Id - (\d+)\(([0-9a-f]+)\.txn\)$`)
	for k, v := range marks {
		m := markKey.FindStringSubmatch(k)
		if m == nil || !regexp.MustCompile(`^Pos - \d+$`).MatchString(v) {
			t.Fatalf("last_log_mark %q : %q", k, v)
		}
		if id, _ := strconv.ParseInt(m[1], 10, 64); strconv.FormatInt(id, 16) != m[2] {
			t.Fatalf("last_log_mark %q: the hex id is not the id", k)
		}
	}

	// The journal's files, by file_type and in the full listing.
	_, body = w.get(t, "GET", bk+"list_disk_file?file_type=journal")
	var files map[string]string
	if err := json.Unmarshal([]byte(body), &files); err != nil || len(files) != 1 ||
		!regexp.MustCompile(`^([0-9a-f]+\.txn\t)+$`).MatchString(files["journal files"]) {
		t.Fatalf("list_disk_file?file_type=journal %q: %v", body, err)
	}
	_, body = w.get(t, "GET", bk+"list_disk_file")
	if err := json.Unmarshal([]byte(body), &files); err != nil || len(files) != 3 || files["index files"] != "" {
		t.Fatalf("list_disk_file %q: %v", body, err)
	}

	// The cookies match.
	w.expect(t, "PUT", bk+"expand_storage", "", 200, "Success expand storage")

	// An index compaction runs on the GC loop and is counted.
	w.expect(t, "PUT", bk+"entry_location_compact", `{"entryLocationRocksDBCompact":true}`, 200,
		fmt.Sprintf("%q", "Triggered entry Location RocksDB compact on bookie:"+w.b.ID()))
	poll(t, "the index compaction", func() bool {
		return !w.b.IndexCompacting() && w.b.GCStatus().EntryLocationCompactions == 1
	})
	w.expect(t, "GET", bk+"entry_location_compact", "", 200, fmt.Sprintf("{\n  %q : false\n}", w.b.IndexPath()))

	// Three bookies with cookies, all writable; no auditor in this cluster.
	w.expect(t, "GET", bk+"cluster_info", "", 200, `{
  "auditorElected" : false,
  "auditorId" : "",
  "clusterUnderReplicated" : false,
  "ledgerReplicationEnabled" : true,
  "totalBookiesCount" : 3,
  "writableBookiesCount" : 3,
  "readonlyBookiesCount" : 0,
  "unavailableBookiesCount" : 0
}`)
	w.c.Stop(0)
	poll(t, "the stopped bookie counted unavailable", func() bool {
		_, body := w.get(t, "GET", bk+"cluster_info")
		return strings.Contains(body, `"unavailableBookiesCount" : 1`)
	})

	// Every bookie still registered answers GET_BOOKIE_INFO; the sums end
	// the listing.
	_, body = w.get(t, "GET", bk+"list_bookie_info")
	var infos map[string]string
	if err := json.Unmarshal([]byte(body), &infos); err != nil || len(infos) != 3 ||
		!strings.HasPrefix(infos[w.b.ID()], ": {Free: ") || !strings.HasPrefix(infos["ClusterInfo: "], "{Free: ") ||
		!strings.HasSuffix(body, "\"\n}") || !strings.Contains(body, "\"ClusterInfo: \" : \"{Free: ") {
		t.Fatalf("list_bookie_info %q: %v", body, err)
	}
	if i := strings.Index(body, "ClusterInfo"); strings.Contains(body[i:], w.b.ID()) {
		t.Fatalf("list_bookie_info: the sums are not last: %s", body)
	}

	// A read-only bookie refuses the test's adds: it fails.
	w.expect(t, "PUT", bk+"state/readonly", `{"readOnly":true}`, 200, "{\n  \"readOnly\" : true\n}")
	w.expect(t, "GET", bk+"sanity", "", 200, "{\n  \"passed\" : false,\n  \"readOnly\" : false\n}")
}
