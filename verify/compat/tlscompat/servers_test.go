package tlscompat

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"keeper/coordination/server"
	"keeper/coordination/zoocfg"
	"keeper/internal/testhost"
	"keeper/verify/compat/zkreal"
)

// tlsServer is a server under test: keeper or ZooKeeper.
type tlsServer struct {
	name          string
	plain, secure string // client addresses; "" when absent
}

// startKeeper runs an in-process keeper from zoo.cfg lines, through the
// parser and ConfigFromZoo as keeper server does, on ephemeral ports: a
// plaintext port and a TLS-only one.
func startKeeper(t *testing.T, extra map[string]string, tweak func(*server.Config)) tlsServer {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=2181\nclientPortAddress=127.0.0.1\nsecureClientPort=2281\nsecureClientPortAddress=127.0.0.1\n", t.TempDir())
	for k, v := range extra {
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	zc, _, err := zoocfg.Parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if err := zc.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg := server.ConfigFromZoo(zc, slog.New(slog.DiscardHandler))
	cfg.ClientAddr, cfg.SecureClientAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0", ""
	if tweak != nil {
		tweak(&cfg)
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return tlsServer{name: "keeper", plain: s.Addr().String(), secure: s.SecureAddr().String()}
}

// startZooKeeper runs Apache ZooKeeper with the same TLS keys, on Netty
// (which ZooKeeper needs for TLS).
func startZooKeeper(t *testing.T, extra map[string]string) tlsServer {
	t.Helper()
	if err := zkreal.Available(); err != nil {
		zkreal.Start(t, zkreal.Options{}) // skips, or fails under KEEPER_REQUIRE_ZK
	}
	port := testhost.Port(t)
	cfg := map[string]string{
		"serverCnxnFactory":       "org.apache.zookeeper.server.NettyServerCnxnFactory",
		"secureClientPort":        fmt.Sprint(port),
		"secureClientPortAddress": "127.0.0.1",
	}
	for k, v := range extra {
		cfg[k] = v
	}
	s := zkreal.Start(t, zkreal.Options{ExtraConfig: cfg})
	return tlsServer{name: "zookeeper", plain: s.Addr(), secure: fmt.Sprintf("127.0.0.1:%d", port)}
}

// storeKeys are the zoo.cfg lines of a server's key and trust stores.
func storeKeys(keyStore, trustStore string, clientAuth string) map[string]string {
	m := map[string]string{
		"ssl.keyStore.location":   keyStore,
		"ssl.keyStore.password":   storePass,
		"ssl.trustStore.location": trustStore,
		"ssl.trustStore.password": storePass,
	}
	if clientAuth != "" {
		m["ssl.clientAuth"] = clientAuth
	}
	return m
}

// probeTimeout bounds one probe; a refused connection ends far sooner.
var probeTimeout = testhost.Scale(20 * time.Second)

// probe opens a session over conn and reads "/" (exists), speaking the
// wire protocol directly, and returns nil if the server served it.
func probe(conn net.Conn) error {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(probeTimeout))
	var req []byte
	req = binary.BigEndian.AppendUint32(req, 0)     // protocolVersion
	req = binary.BigEndian.AppendUint64(req, 0)     // lastZxidSeen
	req = binary.BigEndian.AppendUint32(req, 10000) // timeOut
	req = binary.BigEndian.AppendUint64(req, 0)     // sessionId
	req = binary.BigEndian.AppendUint32(req, 16)
	req = append(req, make([]byte, 16)...)
	req = append(req, 0)
	resp, err := roundTrip(conn, req)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if len(resp) < 16 || int32(binary.BigEndian.Uint32(resp[4:8])) <= 0 {
		return errors.New("connect: session refused")
	}
	req = binary.BigEndian.AppendUint32(nil, 1) // xid
	req = binary.BigEndian.AppendUint32(req, 3) // exists
	req = binary.BigEndian.AppendUint32(req, 1)
	req = append(req, '/', 0)
	if resp, err = roundTrip(conn, req); err != nil {
		return fmt.Errorf("exists: %w", err)
	}
	if len(resp) < 16 || binary.BigEndian.Uint32(resp[12:16]) != 0 {
		return errors.New("exists: failed")
	}
	return nil
}

func roundTrip(conn net.Conn, body []byte) ([]byte, error) {
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if _, err := conn.Write(append(frame, body...)); err != nil {
		return nil, err
	}
	var n [4]byte
	if _, err := io.ReadFull(conn, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 1<<20 {
		return nil, fmt.Errorf("frame of %d bytes", size)
	}
	resp := make([]byte, size)
	_, err := io.ReadFull(conn, resp)
	return resp, err
}

// probeTLS dials addr with cfg and probes; a failed handshake is a
// refusal too.
func probeTLS(addr string, cfg *tls.Config) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: probeTimeout}, "tcp", addr, cfg)
	if err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	return probe(conn)
}

func probePlain(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return err
	}
	return probe(conn)
}

// connectZK opens a go-zookeeper session over TLS with cfg and waits for
// it; it fails the test if none comes.
func connectZK(t *testing.T, addr string, cfg *tls.Config) *zk.Conn {
	t.Helper()
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, cfg)
	}
	conn, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithDialer(dialer), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(testhost.Scale(30 * time.Second))
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			t.Fatalf("no session with %s over TLS", addr)
		}
	}
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// zkAuthACL is the auth ACL with every permission: the creator's
// authenticated identities.
func zkAuthACL() []zk.ACL { return zk.AuthACL(zk.PermAll) }
