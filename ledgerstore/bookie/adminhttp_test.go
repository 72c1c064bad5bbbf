package bookie

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"keeper/ledgerstore/bkproto"
)

// TestHTTPAdminPortTaken: a bookie whose admin API cannot listen refuses
// to start (the setting is never dropped) and leaves its directories
// unlocked; started again on a free port, it serves, and its registration
// names the API as its http endpoint even with a metrics port of its own.
func TestHTTPAdminPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	e := newEnv(t, true)
	e.tweak = func(c *Config) { c.HTTPServerAddr = ln.Addr().String() }
	if _, err := e.tryStart(); err == nil || !strings.Contains(err.Error(), "httpServerPort") {
		t.Fatalf("start with the admin port taken: %v, want an httpServerPort error", err)
	}
	e.tweak = func(c *Config) { c.HTTPServerAddr, c.MetricsAddr = "127.0.0.1:0", "127.0.0.1:0" }
	b := e.start()
	if b.HTTPAddr() == nil || !b.Running() || b.ShuttingDown() {
		t.Fatalf("HTTPAddr %v, Running %v, ShuttingDown %v", b.HTTPAddr(), b.Running(), b.ShuttingDown())
	}
	free, total, err := b.DiskSpace()
	if err != nil || total != 2<<30 || free != total-total/10 {
		t.Fatalf("DiskSpace %d %d %v", free, total, err)
	}
	data, _, err := e.zkConn().Get(t.Context(), "/ledgers/available/"+e.id)
	if err != nil {
		t.Fatal(err)
	}
	var info bkproto.BookieServiceInfoFormat
	if err := proto.Unmarshal(data, &info); err != nil || len(info.Endpoints) != 2 {
		t.Fatalf("registration data %v: %v", &info, err)
	}
	if ep := info.Endpoints[1]; ep.GetId() != "httpserver" || int(ep.GetPort()) != b.HTTPAddr().(*net.TCPAddr).Port {
		t.Fatalf("http endpoint %v, admin API on %v", ep, b.HTTPAddr())
	}
	resp, err := http.Get("http://" + b.HTTPAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "bookie_SERVER_STATUS 1") {
		t.Fatalf("admin API /metrics lacks the bookie's registry:\n%.300s", body)
	}
}
