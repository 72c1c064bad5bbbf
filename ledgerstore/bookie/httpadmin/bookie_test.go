package httpadmin_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/autorecovery"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookie"
	"keeper/ledgerstore/bookie/entrystore"
	"keeper/ledgerstore/bookie/httpadmin"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/ledgerclient/ledgertest"
	"keeper/ledgerstore/metadata"
)

// world is a ledger cluster of one plain bookie (ledgertest) and one bookie
// started from bookkeeper.conf keys with httpServerEnabled=true.
type world struct {
	c     *ledgertest.Cluster
	b     *bookie.Bookie
	base  string
	store *metadata.Store
}

func newWorld(t *testing.T) *world { t.Helper(); return newWorldN(t, 1) }

// newWorldN is newWorld with n plain bookies.
func newWorldN(t *testing.T, n int) *world {
	t.Helper()
	c := ledgertest.Start(t, n)
	dir := t.TempDir()
	props := map[string]string{
		"bookiePort":         "0",
		"advertisedAddress":  "127.0.0.1",
		"journalDirectories": filepath.Join(dir, "journal"),
		"ledgerDirectories":  filepath.Join(dir, "ledgers"),
		"zkServers":          c.ZKAddr(),
		"httpServerEnabled":  "true",
		"httpServerPort":     "0",
		"httpServerHost":     "127.0.0.1",
	}
	cfg, ignored, err := bookie.ConfigFromProperties(props)
	if err != nil || len(ignored) != 0 {
		t.Fatalf("config: %v (ignored %v)", err, ignored)
	}
	if cfg.HTTPServerAddr != "127.0.0.1:0" {
		t.Fatalf("HTTPServerAddr %q", cfg.HTTPServerAddr)
	}
	// What cmd/keeper wires in: autorecovery's Operator and a ledger
	// client, closed after the bookie.
	lc, err := ledgerclient.New(ledgerclient.Config{ZKServers: []string{c.ZKAddr()},
		ZKSessionTimeout: testhost.Scale(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lc.Close)
	cfg.HTTPRecovery = func(st *metadata.Store, id string) httpadmin.Recovery {
		return autorecovery.NewOperator(st, id, nil, func() (*ledgerclient.Client, error) { return lc, nil })
	}
	cfg.HTTPLedgers = testLedgers{lc}
	cfg.JournalPreAllocSizeBytes = 1 << 20
	cfg.WriteCacheBytes, cfg.ReadCacheBytes = 4<<20, 4<<20
	cfg.GCWaitTime, cfg.FlushInterval, cfg.DiskCheckInterval = -1, time.Hour, time.Hour
	cfg.ZKSessionTimeout = testhost.Scale(10 * time.Second)
	cfg.DiskUsage = func(dir string) (entrystore.DirUsage, error) {
		return entrystore.DirUsage{Dir: dir, UsedBytes: 1 << 20, TotalBytes: 1 << 30}, nil
	}
	b, err := bookie.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	sess, err := metadata.Dial(ctx, metadata.DialConfig{Servers: []string{c.ZKAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	store, err := sess.NewStore(metadata.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return &world{c: c, b: b, base: "http://" + b.HTTPAddr().String(), store: store}
}

// testLedgers opens ledgers for ledger/read with a ledger client.
type testLedgers struct{ c *ledgerclient.Client }

func (l testLedgers) OpenNoRecovery(ctx context.Context, id int64, pw []byte) (httpadmin.LedgerReader, error) {
	h, err := l.c.OpenNoRecovery(ctx, id, pw)
	if err != nil {
		return nil, err
	}
	return h, nil
}

func (l testLedgers) SanityTest(ctx context.Context, bookie ledger.BookieID, entries int) error {
	return l.c.SanityTest(ctx, bookie, entries)
}

func (w *world) get(t *testing.T, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, w.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func (w *world) create(t *testing.T, id int64, md ledger.Metadata) ledger.Metadata {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := w.store.Create(ctx, id, md); err != nil {
		t.Fatal(err)
	}
	got, _, err := w.store.Read(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestBookieHTTP checks every endpoint's status and JSON layout against a
// running bookie and metadata store.
func TestBookieHTTP(t *testing.T) {
	w := newWorld(t)
	other := w.c.Bookies[0].ID()
	md := metadata.NewOpen([]ledger.BookieID{ledger.BookieID(other), ledger.BookieID(w.b.ID())}, 2, 2,
		bkproto.DigestCRC32C, []byte("pw"))
	md.Custom = map[string][]byte{"app": []byte("x")}
	md2 := w.create(t, 2, md)
	w.create(t, 10, metadata.NewOpen([]ledger.BookieID{ledger.BookieID(other)}, 1, 1, bkproto.DigestCRC32, nil))

	ro := fmt.Sprintf("{\n  %q : null\n}", other) // rw lists both; ro none until SetReadOnly
	wantMeta := fmt.Sprintf(`{
  "2" : {
    "ledgerId" : 2,
    "allEnsembles" : {
      "0" : [ {
        "id" : %q
      }, {
        "id" : %q
      } ]
    },
    "ensembleSize" : 2,
    "writeQuorumSize" : 2,
    "ackQuorumSize" : 2,
    "ctime" : %d,
    "password" : %q,
    "digestType" : "CRC32C",
    "lastEntryId" : -1,
    "length" : 0,
    "closed" : false,
    "state" : "OPEN",
    "customMetadata" : {
      "app" : %q
    },
    "metadataFormatVersion" : 3,
    "ctoken" : %d
  }
}`, other, w.b.ID(), md2.CTimeMillis, base64.StdEncoding.EncodeToString([]byte("pw")),
		base64.StdEncoding.EncodeToString([]byte("x")), md2.CToken)
	ids := []string{other, w.b.ID()}
	if ids[1] < ids[0] {
		ids[0], ids[1] = ids[1], ids[0]
	}
	tests := []struct {
		method, path string
		code         int
		want         string // whole body, unless prefix
		prefix       bool
	}{
		{"GET", "/heartbeat", 200, "OK\n", false},
		{"GET", "/api/v1/bookie/is_ready", 200, "OK", false},
		{"GET", "/api/v1/bookie/state", 200,
			"{\n  \"running\" : true,\n  \"readOnly\" : false,\n  \"shuttingDown\" : false,\n  \"availableForHighPriorityWrites\" : true\n}", false},
		{"GET", "/api/v1/bookie/info", 200,
			fmt.Sprintf("{\n  \"freeSpace\" : %d,\n  \"totalSpace\" : %d\n}", 1<<30-1<<20, 1<<30), false},
		{"GET", "/api/v1/config/server_config", 200, "{\n  \"advertisedAddress\" : \"127.0.0.1\",\n  \"bookiePort\" : \"0\",\n", true},
		{"GET", "/metrics", 200, "", false},
		{"GET", "/api/v1/bookie/list_bookies?type=rw", 200,
			fmt.Sprintf("{\n  %q : null,\n  %q : null\n}", ids[0], ids[1]), false},
		{"GET", "/api/v1/bookie/list_bookies?type=rw&print_hostnames=true", 200,
			fmt.Sprintf("{\n  %q : \"127.0.0.1\",\n  %q : \"127.0.0.1\"\n}", ids[0], ids[1]), false},
		{"GET", "/api/v1/bookie/list_bookies?type=ro", 200, "{ }", false},
		{"GET", "/api/v1/ledger/list", 200, "{\n  \"2\" : null,\n  \"10\" : null\n}", false},
		{"GET", "/api/v1/ledger/list?print_metadata=true", 200, "{\n  \"2\" : \"BookieMetadataFormatVersion\\t3\\n", true},
		{"GET", "/api/v1/ledger/list?print_metadata=true&decode_meta=true", 200,
			"{\n  \"2\" : {\n    \"ledgerId\" : 2,\n", true},
		{"GET", "/api/v1/ledger/metadata?ledger_id=2", 200, wantMeta, false},
		{"GET", "/api/v1/ledger/metadata/?ledger_id=2", 200, wantMeta, false},
		{"GET", "/api/v1/ledger/metadata?ledger_id=3", 404, "Ledger 3 does not exist", false},
		{"DELETE", "/api/v1/ledger/delete?ledger_id=3", 404, "Ledger 3 does not exist", false},
		{"GET", "/api/v1/bookie/nope", 404, "<html><body><h1>Resource not found</h1></body></html>", false},
	}
	for _, tc := range tests {
		code, body := w.get(t, tc.method, tc.path)
		if code != tc.code {
			t.Errorf("%s %s: code %d, want %d (%q)", tc.method, tc.path, code, tc.code, body)
			continue
		}
		if tc.prefix && !strings.HasPrefix(body, tc.want) || !tc.prefix && tc.want != "" && body != tc.want {
			t.Errorf("%s %s: body\n%s\nwant\n%s", tc.method, tc.path, body, tc.want)
		}
	}
	if _, body := w.get(t, "GET", "/metrics"); !strings.Contains(body, "bookie_SERVER_STATUS 1") {
		t.Errorf("metrics lack bookie_SERVER_STATUS 1:\n%.500s", body)
	}
	w.c.SetReadOnly(0, true)
	if _, body := w.get(t, "GET", "/api/v1/bookie/list_bookies?type=ro"); body != ro {
		t.Errorf("read-only bookies %q, want %q", body, ro)
	}
}

// TestBookieHTTPForceGC: PUT /api/v1/bookie/gc asks the bookie's GC loop
// for a run, GET reports is_in_force_gc until it is over, and gc_details
// counts the compaction it ran.
func TestBookieHTTPForceGC(t *testing.T) {
	w := newWorld(t)
	code, body := w.get(t, "PUT", "/api/v1/bookie/gc")
	if want := fmt.Sprintf("%q", "Triggered GC on BookieServer: "+w.b.ID()); code != 200 || body != want {
		t.Fatalf("PUT gc: %d %q, want 200 %q", code, body, want)
	}
	deadline := time.Now().Add(testhost.Scale(20 * time.Second))
	for {
		_, body := w.get(t, "GET", "/api/v1/bookie/gc")
		if body == "{\n  \"is_in_force_gc\" : \"false\"\n}" {
			break
		}
		if body != "{\n  \"is_in_force_gc\" : \"true\"\n}" {
			t.Fatalf("GET gc: %q", body)
		}
		if time.Now().After(deadline) {
			t.Fatal("the forced GC did not end")
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, with a deadline
	}
	// The forced run did a major compaction (enabled by default, not
	// suspended), which moves the minor compaction's time too.
	_, body = w.get(t, "GET", "/api/v1/bookie/gc_details")
	var details []map[string]any
	if err := json.Unmarshal([]byte(body), &details); err != nil || len(details) != 1 {
		t.Fatalf("gc_details %q: %v", body, err)
	}
	d := details[0]
	if d["majorCompactionCounter"] != 1.0 || d["minorCompactionCounter"] != 0.0 || d["forceCompacting"] != false ||
		d["majorCompacting"] != false || d["lastMajorCompactionTime"] != d["lastMinorCompactionTime"] ||
		d["entryLocationCompactionCounter"] != 0.0 {
		t.Fatalf("gc_details after a forced run: %s", body)
	}
}

// TestBookieHTTPStops: the API goes with the bookie.
func TestBookieHTTPStops(t *testing.T) {
	w := newWorld(t)
	if err := w.b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(w.base + "/heartbeat"); err == nil {
		t.Fatal("the admin API still answers after Close")
	}
}
