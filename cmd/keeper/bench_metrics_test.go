package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"keeper/ledgerstore/ledgerclient"
)

// TestClientMetricsEndpoint scrapes what `keeper bench ledger
// --metrics-addr` serves: BookKeeper's client names, a summary in ms per
// operation labelled success, and the ensemble-change counter.
func TestClientMetricsEndpoint(t *testing.T) {
	m := new(ledgerclient.Metrics)
	m.AddEntry.Record(2500, true) // 2.5 ms
	m.AddEntry.Record(100, false)
	m.EnsembleChanges.Inc()
	var progress bytes.Buffer
	stop, err := serveClientMetrics("127.0.0.1:0", m, &progress)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	url, ok := strings.CutPrefix(strings.TrimSpace(progress.String()), "client metrics at ")
	if !ok {
		t.Fatalf("progress says %q", progress.String())
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for name := range m.OpStats() {
		if f := families[name]; f.GetType() != dto.MetricType_SUMMARY || len(f.GetMetric()) != 2 {
			t.Errorf("%s: %v", name, f)
		}
	}
	for _, s := range families["bookkeeper_client_ADD_ENTRY"].GetMetric() {
		if s.GetLabel()[0].GetValue() == "true" && (s.GetSummary().GetSampleCount() != 1 || s.GetSummary().GetSampleSum() != 2.5) {
			t.Errorf("ADD_ENTRY successes: %v", s.GetSummary())
		}
	}
	if f := families["bookkeeper_client_NUM_ENSEMBLE_CHANGE"]; f.GetType() != dto.MetricType_COUNTER ||
		f.GetMetric()[0].GetCounter().GetValue() != 1 {
		t.Errorf("NUM_ENSEMBLE_CHANGE: %v", f)
	}
}
