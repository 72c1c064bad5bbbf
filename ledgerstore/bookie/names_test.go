package bookie

import (
	"bufio"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"keeper/ledgerstore/ledgerclient"
)

// bkName is one line of testdata/bookkeeper-metrics.txt.
type bkName struct {
	name, kind, keeper string
}

// readBookKeeperNames parses testdata/bookkeeper-metrics.txt.
func readBookKeeperNames(t *testing.T) []bkName {
	t.Helper()
	f, err := os.Open("testdata/bookkeeper-metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []bkName
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 3 {
			t.Fatalf("line %d: %q: want name, type, keeper", line, text)
		}
		n := bkName{fields[0], fields[1], fields[2]}
		switch {
		case n.kind != "summary" && n.kind != "counter" && n.kind != "gauge":
			t.Fatalf("line %d: type %q", line, n.kind)
		case n.keeper != "measured" && n.keeper != "left-out" && n.keeper != "keeper":
			t.Fatalf("line %d: %q: want measured, left-out or keeper", line, n.keeper)
		}
		out = append(out, n)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// clientFamilies returns what a ledger client's metrics export.
func clientFamilies(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	m := new(ledgerclient.Metrics)
	// Labelled figures have series only once a bookie has some.
	m.EnsembleBookie("127.0.0.1:3181")
	m.Channel("127.0.0.1:3181")
	h, err := MetricsHandler(Figures{Latencies: m.OpStats(), Values: m.Values(), Counters: m.Counters(),
		Gauges: m.Gauges(), CountersByBookie: m.CountersByBookie(), LatenciesByBookie: m.LatenciesByBookie()})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// TestBookKeeperNames holds keeper's exported names to BookKeeper's list
// (testdata/bookkeeper-metrics.txt): every name marked measured is
// exported by a bookie or a ledger client, with BookKeeper's type; every
// name marked left-out is not, and docs/observability.md names it; and
// every bookie_*, bookkeeper_server_* or bookkeeper_client_* name keeper
// exports is on the list.
func TestBookKeeperNames(t *testing.T) {
	names := readBookKeeperNames(t)
	e := newEnv(t, false)
	e.tweak = func(c *Config) { c.MetricsAddr = "127.0.0.1:0" }
	b := e.start()
	exported := scrape(t, b)
	for name, f := range clientFamilies(t) {
		exported[name] = f
	}
	doc, err := os.ReadFile("../../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]dto.MetricType{"summary": dto.MetricType_SUMMARY, "counter": dto.MetricType_COUNTER,
		"gauge": dto.MetricType_GAUGE}
	listed := map[string]bool{}
	for _, n := range names {
		if listed[n.name] {
			t.Errorf("%s listed twice", n.name)
		}
		listed[n.name] = true
		f, ok := exported[n.name]
		switch {
		case n.keeper == "left-out" && ok:
			t.Errorf("%s is exported but listed as left out", n.name)
		case n.keeper == "left-out" && !strings.Contains(string(doc), "`"+n.name+"`"):
			t.Errorf("%s is left out, but docs/observability.md does not say why", n.name)
		case n.keeper != "left-out" && !ok:
			t.Errorf("%s is not exported", n.name)
		case n.keeper != "left-out" && f.GetType() != types[n.kind]:
			t.Errorf("%s: exported as a %s, BookKeeper's is a %s", n.name, f.GetType(), n.kind)
		}
	}
	for name := range exported {
		ours := strings.HasPrefix(name, "bookie_") || strings.HasPrefix(name, "bookkeeper_")
		if ours && !listed[name] {
			t.Errorf("%s is exported but not in testdata/bookkeeper-metrics.txt", name)
		}
	}
}
