package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// commandsPath is the AdminServer's command URL (admin.commandURL).
const commandsPath = "/commands"

// Handler returns the admin HTTP handler: /commands, /commands/<name> and
// /metrics. Commands answer GET (and HEAD), as in ZooKeeper 3.8.
func (a *Admin) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(commandsPath, a.serveCommand)
	mux.HandleFunc(commandsPath+"/", a.serveCommand)
	mux.Handle("/metrics", promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}))
	return mux
}

// serveCommand lists the commands, or runs the one the path names.
func (a *Admin) serveCommand(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, commandsPath), "/")
	if name == "" {
		a.serveLinks(w)
		return
	}
	body, err := a.commandJSON(name, r.URL.Query())
	if err != nil {
		a.log.Error("admin command output failed", "command", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

// serveLinks writes a link per command, primary names in order, as
// ZooKeeper's CommandServlet does.
func (a *Admin) serveLinks(w http.ResponseWriter) {
	names := make([]string, 0, len(httpCommands))
	for _, c := range httpCommands {
		names = append(names, c.names[0])
	}
	slices.Sort(names)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	for _, n := range names {
		fmt.Fprintf(w, "<a href=\"%s/%s\">%s</a>\n<br/>\n", commandsPath, n, n)
	}
}

// commandJSON runs the named command and encodes its response. An unknown
// name gives ZooKeeper's "Unknown command: <name>" error object; a command
// that needs the core once it has stopped gives the not-serving error.
func (a *Admin) commandJSON(name string, args url.Values) ([]byte, error) {
	cmd, ok := commandByName(name)
	if !ok {
		return encodeResponse(name, nil, "Unknown command: "+name)
	}
	fields, errMsg := cmd.run(a, args)
	return encodeResponse(cmd.names[0], fields, errMsg)
}

// encodeResponse writes a command response: its fields, then "command" and
// "error" (null when errMsg is empty), indented as Jackson indents. A
// command that put its own "error" among its fields (leader on a
// standalone server) keeps it there, before "command", as ZooKeeper's
// ordered response map does.
func encodeResponse(command string, fields []field, errMsg string) ([]byte, error) {
	var errValue any
	if errMsg != "" {
		errValue = errMsg
	}
	obj := append(object(fields), field{"command", command})
	if !slices.ContainsFunc(fields, func(f field) bool { return f.key == "error" }) {
		obj = append(obj, field{"error", errValue})
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// object is a JSON object whose keys keep their order.
type object []field

// MarshalJSON writes the fields in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, fmt.Errorf("admin: field %s: %w", f.key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// HTTPServer is a running admin HTTP server.
type HTTPServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// readHeaderTimeout bounds how long a client may take to send its request
// headers, so idle scanners cannot hold connections open.
const readHeaderTimeout = 10 * time.Second

// Listen starts serving Handler on addr ("host:port"; port 0 picks one),
// in plaintext, over TLS, or both, as https says. The read header timeout
// bounds a TLS handshake too. Close stops it.
func (a *Admin) Listen(addr string, https HTTPS) (*HTTPServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin: listen on %s: %w", addr, err)
	}
	h := &HTTPServer{
		srv: &http.Server{
			Handler:           withSTS(a.Handler()),
			ReadHeaderTimeout: readHeaderTimeout,
			ConnContext:       rememberConn,
			ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelDebug),
		},
		ln:   ln,
		done: make(chan struct{}),
	}
	served := https.listener(ln, a.insecure)
	go func() {
		defer close(h.done)
		if err := h.srv.Serve(served); !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("admin server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	a.log.Info("admin server listening", "addr", ln.Addr().String(),
		"https", https.TLS != nil, "httpToo", https.TLS == nil || https.PlaintextToo)
	return h, nil
}

// Addr returns the address the server listens on.
func (h *HTTPServer) Addr() net.Addr { return h.ln.Addr() }

// Close stops the server, waiting up to a second for requests in flight.
func (h *HTTPServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := h.srv.Shutdown(ctx)
	if err != nil {
		err = h.srv.Close()
	}
	<-h.done
	return err
}
