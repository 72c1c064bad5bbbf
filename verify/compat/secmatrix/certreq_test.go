package secmatrix

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/verify/compat/internal/launcher"
	"keeper/verify/compat/internal/pkitest"
	"keeper/verify/compat/zkreal"
)

// TestCertificateRequest dials the election port and the secure client
// port of one member of each kind, started alone with sslQuorum,
// ssl.quorum.clientAuth=want and ssl.clientAuth=want, and records what
// each port's CertificateRequest names (the CAs a peer's certificate
// should be issued by, certificate_authorities) and how the handshake
// ends without a certificate and with one an untrusted CA issued. Both
// kinds must name the trust store's CA and no other, let the peer without
// a certificate in, and refuse the untrusted one. A dialling member, of
// either kind, holds back a certificate none of the named CAs issued:
// this is what lets an untrusted member in under want (docs/tls.md,
// "Between servers").
func TestCertificateRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a ZooKeeper JVM")
	}
	if err := zkreal.Available(); err != nil {
		zkreal.Start(t, zkreal.Options{}) // skips, or fails under KEEPER_REQUIRE_ZK
	}
	pkitest.RequireTools(t, "openssl", "keytool")
	f := &fixture{dir: t.TempDir()}
	f.ca = f.issue(t, "ca", "matrix CA", nil)
	server := f.issue(t, "server", "localhost", f.ca)
	f.serverStore = filepath.Join(f.dir, "server.p12")
	pkitest.PKCS12(t, server, f.ca, "server", f.serverStore, storePass)
	f.trust = filepath.Join(f.dir, "trust.jks")
	pkitest.TrustStore(t, f.ca, f.trust, "JKS", storePass)
	rogueCA := f.issue(t, "rogue-ca", "rogue CA", nil)
	rogue := f.issue(t, "rogue", "localhost", rogueCA)
	rogueCert, err := tls.LoadX509KeyPair(rogue.CertPEM, rogue.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{f.ca.Cert.Subject.String()}

	got := map[string]string{}
	for _, kind := range []string{"keeper", "zookeeper"} {
		t.Run(kind, func(t *testing.T) {
			securePort := testhost.Port(t)
			lines := append(quorumCell{tls: "want", sasl: "none"}.conf(f, false).lines,
				"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
				"secureClientPort="+strconv.Itoa(securePort), "secureClientPortAddress=127.0.0.1",
				"ssl.keyStore.location="+f.serverStore, "ssl.keyStore.password="+storePass, "ssl.keyStore.type=PKCS12",
				"ssl.trustStore.location="+f.trust, "ssl.trustStore.password="+storePass, "ssl.trustStore.type=JKS",
				"ssl.clientAuth=want")
			ms := launcher.Layout(t, t.TempDir(), 3, func(id int) string { return fmt.Sprintf("m%d-%s", id, kind) })
			launcher.Cleanup(t, ms, func(*launcher.Member) string { return kind })
			m := ms[0]
			if err := launcher.WriteConfig(m, ms, quorumTiming, lines); err != nil {
				t.Fatal(err)
			}
			var cmd *exec.Cmd
			if kind == "zookeeper" {
				cmd = zkreal.QuorumPeerCommand(t, m.CfgPath(), zkreal.Options{})
				cmd.Dir = m.Dir
			} else {
				cmd = exec.Command(keeperBin, "server", m.CfgPath())
				cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			}
			m.Start(t, cmd, func(n int) string { return fmt.Sprintf("run%d.log", n) }, testhost.Scale(60*time.Second), 50*time.Millisecond)
			var outcomes []string
			for _, port := range []struct {
				name string
				port int
			}{{"election", m.ElecPort}, {"secure client", securePort}} {
				outcome := probeCertificateRequest(t, port.name, net.JoinHostPort("127.0.0.1", strconv.Itoa(port.port)), &rogueCert, wantNames)
				outcomes = append(outcomes, port.name+": "+outcome)
			}
			got[kind] = strings.Join(outcomes, "; ")
			t.Logf("%s: %s", kind, got[kind])
		})
	}
	if got["keeper"] != got["zookeeper"] {
		t.Errorf("keeper: %s\nzookeeper: %s", got["keeper"], got["zookeeper"])
	}
}

// probeCertificateRequest dials addr without a certificate, then with
// rogue, and checks that the server names wantNames, lets the first in
// and refuses the second; it returns what it saw.
func probeCertificateRequest(t *testing.T, port, addr string, rogue *tls.Certificate, wantNames []string) string {
	t.Helper()
	// ZooKeeper answers ruok before it binds the election port.
	var names []string
	var plainErr error
	if err := launcher.Poll(testhost.Scale(30*time.Second), 100*time.Millisecond, func() (bool, string) {
		names, plainErr = certificateRequest(addr, nil)
		return !errors.Is(plainErr, syscall.ECONNREFUSED), fmt.Sprint(plainErr)
	}); err != nil {
		t.Fatalf("%s port: %v", port, err)
	}
	_, rogueErr := certificateRequest(addr, rogue)
	if plainErr != nil {
		t.Errorf("%s port, without a certificate: %v", port, plainErr)
	}
	if rogueErr == nil {
		t.Errorf("%s port: a certificate of an untrusted CA was let in", port)
	}
	if !slices.Equal(names, wantNames) {
		t.Errorf("%s port: the CertificateRequest names %q, want the trust store's CA %q", port, names, wantNames)
	}
	return fmt.Sprintf("names=%q without=%v untrusted-refused=%v", names, plainErr == nil, rogueErr != nil)
}

// certificateRequest runs a TLS 1.2 handshake with addr, offering cert
// (none when nil) whatever the server names, and returns the CA names of
// the server's CertificateRequest, each as its distinguished name, and how
// the handshake ended. In TLS 1.2 the server checks the client's
// certificate before it sends its Finished, so a refusal fails the
// handshake.
func certificateRequest(addr string, cert *tls.Certificate) ([]string, error) {
	var names []string
	var asked bool
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		MaxVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // the test looks at the request, not the server
		GetClientCertificate: func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
			asked = true
			for _, raw := range cri.AcceptableCAs {
				var rdn pkix.RDNSequence
				if _, err := asn1.Unmarshal(raw, &rdn); err != nil {
					return nil, err
				}
				var n pkix.Name
				n.FillFromRDNSequence(&rdn)
				names = append(names, n.String())
			}
			if cert == nil {
				return &tls.Certificate{}, nil
			}
			return cert, nil
		},
	}
	d := &net.Dialer{Timeout: testhost.Scale(10 * time.Second)}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return names, err
	}
	defer c.Close()
	if !asked {
		return names, fmt.Errorf("the server asked for no certificate")
	}
	return names, nil
}
