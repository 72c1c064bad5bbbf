package bookie

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/bookietls"
	"keeper/ledgerstore/bookietls/bookietlstest"
)

// pki is a test's certificates: a CA, a bookie and a client it signs,
// and a stranger's CA with a client of its own.
type pki struct {
	dir                    string
	ca, bookie, client     *bookietlstest.Cert
	otherCA, otherClient   *bookietlstest.Cert
	expired, unnamedBookie *bookietlstest.Cert
}

func newPKI(t *testing.T) *pki {
	dir := t.TempDir()
	p := &pki{dir: dir, ca: bookietlstest.CA(t, dir, "ca"), otherCA: bookietlstest.CA(t, dir, "other-ca")}
	p.bookie = bookietlstest.Issue(t, dir, "bookie", p.ca, bookietlstest.Options{})
	p.client = bookietlstest.Issue(t, dir, "client", p.ca, bookietlstest.Options{})
	p.otherClient = bookietlstest.Issue(t, dir, "other-client", p.otherCA, bookietlstest.Options{})
	p.expired = bookietlstest.Issue(t, dir, "expired", p.ca, bookietlstest.Options{
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	p.unnamedBookie = bookietlstest.Issue(t, dir, "unnamed", p.ca, bookietlstest.Options{NoNames: true})
	return p
}

// tlsBookie starts a bookie serving TLS with s.
func tlsBookie(t *testing.T, s bookietls.Settings) *Bookie {
	e := newEnv(t, false)
	e.tweak = func(c *Config) { c.TLS = s }
	return e.start()
}

// dialTLS connects to b over TLS with client settings s.
func dialTLS(t *testing.T, b *Bookie, s bookietls.Settings, v2 bool) (*bookierpc.Client, error) {
	t.Helper()
	cfg, err := bookietls.New(bookietls.Client, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := bookierpc.DialWith(ctx(t), b.Addr().String(), bookierpc.Options{V2: v2, TLS: cfg})
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

func mustDialTLS(t *testing.T, b *Bookie, s bookietls.Settings, v2 bool) *bookierpc.Client {
	t.Helper()
	c, err := dialTLS(t, b, s, v2)
	if err != nil {
		t.Fatalf("dial over TLS: %v", err)
	}
	return c
}

// TestTLSAddReadFence: adds, reads and a fence over START_TLS, in v3 and
// in v2 (BookKeeper's v2 client starts TLS with a v3 request too), and a
// client that never starts TLS is still served, as BookKeeper serves it.
func TestTLSAddReadFence(t *testing.T) {
	p := newPKI(t)
	b := tlsBookie(t, bookietlstest.Bookie(p.bookie, p.ca, false))
	for _, v2 := range []bool{false, true} {
		c := mustDialTLS(t, b, bookietlstest.Client(p.ca, nil), v2)
		ledger := int64(1)
		if v2 {
			ledger = 2
		}
		addEntries(t, c, ledger, 0, 20)
		for e := int64(0); e < 20; e++ {
			checkEntry(t, c, ledger, e)
		}
		if _, err := c.FenceRead(ctx(t), ledger, bkproto.LastAddConfirmed, testKey); err != nil {
			t.Fatalf("v2=%v: fence read: %v", v2, err)
		}
		err := c.Add(ctx(t), ledger, 20, testKey, body(ledger, 20, 100), false)
		wantStatus(t, "add after fence over TLS", err, bkproto.StatusCode_EFENCED)
	}
	plain := dial(t, b)
	checkEntry(t, plain, 1, 3)
}

// TestTLSClientAuthentication: with tlsClientAuthentication the bookie
// serves a client whose certificate its trust store vouches for, and
// refuses one without a certificate or with a stranger's, each at the
// handshake; the refusals cost only their own connections.
func TestTLSClientAuthentication(t *testing.T) {
	p := newPKI(t)
	b := tlsBookie(t, bookietlstest.Bookie(p.bookie, p.ca, true))
	good := mustDialTLS(t, b, bookietlstest.Client(p.ca, p.client), false)
	addEntries(t, good, 1, 0, 5)
	for name, s := range map[string]bookietls.Settings{
		"no certificate":        bookietlstest.Client(p.ca, nil),
		"a stranger's":          bookietlstest.Client(p.ca, p.otherClient),
		"an expired client one": bookietlstest.Client(p.ca, p.expired),
	} {
		c, err := dialTLS(t, b, s, false)
		if err == nil {
			// TLS 1.3: the client learns of the refusal at its first read.
			_, err = c.Read(ctx(t), 1, 0)
		}
		if err == nil {
			t.Fatalf("%s: served", name)
		}
	}
	checkEntry(t, good, 1, 4)
	again := mustDialTLS(t, b, bookietlstest.Client(p.ca, p.client), false)
	checkEntry(t, again, 1, 2)
}

// TestTLSClientVerifiesBookie: a client refuses a bookie whose
// certificate its trust store does not vouch for, or that has expired,
// and, with tlsHostnameVerificationEnabled, one that does not name the
// host dialled; BookKeeper's default does not check the name.
func TestTLSClientVerifiesBookie(t *testing.T) {
	p := newPKI(t)
	for _, tt := range []struct {
		name     string
		bookie   *bookietlstest.Cert
		trust    *bookietlstest.Cert
		hostname bool
		ok       bool
	}{
		{"trusted", p.bookie, p.ca, false, true},
		{"trusted, name checked", p.bookie, p.ca, true, true},
		{"untrusted", p.bookie, p.otherCA, false, false},
		{"expired", p.expired, p.ca, false, false},
		{"no name, name not checked", p.unnamedBookie, p.ca, false, true},
		{"no name, name checked", p.unnamedBookie, p.ca, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := tlsBookie(t, bookietlstest.Bookie(tt.bookie, p.ca, false))
			s := bookietlstest.Client(tt.trust, nil)
			s.HostnameVerification = tt.hostname
			c, err := dialTLS(t, b, s, false)
			if tt.ok != (err == nil) {
				t.Fatalf("dial: %v, want success %v", err, tt.ok)
			}
			if err != nil {
				if !errors.Is(err, bookierpc.ErrTLS) {
					t.Fatalf("dial: %v, want ErrTLS", err)
				}
				return
			}
			addEntries(t, c, 1, 0, 1)
		})
	}
}

// TestTLSClientOfPlainBookie: a TLS client asking a bookie without TLS
// gets EBADREQ to START_TLS, as from BookKeeper's, and fails the dial.
func TestTLSClientOfPlainBookie(t *testing.T) {
	p := newPKI(t)
	b := newEnv(t, false).start()
	_, err := dialTLS(t, b, bookietlstest.Client(p.ca, nil), false)
	if !errors.Is(err, bookierpc.ErrTLS) {
		t.Fatalf("dial: %v, want ErrTLS", err)
	}
}

// TestStartTLSThenGarbage: a client that sends START_TLS and then
// garbage, or nothing, loses its own connection (the second within the
// handshake timeout) while other clients are served.
func TestStartTLSThenGarbage(t *testing.T) {
	p := newPKI(t)
	s := bookietlstest.Bookie(p.bookie, p.ca, false)
	// Long enough for the good client's handshake on a loaded machine; the
	// silent client waits it out.
	s.HandshakeTimeout = testhost.Scale(time.Second)
	b := tlsBookie(t, s)
	good := mustDialTLS(t, b, bookietlstest.Client(p.ca, nil), false)
	for _, garbage := range [][]byte{[]byte("GET / HTTP/1.1\r\n\r\n"), nil} {
		nc, err := net.Dial("tcp", b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		frame, err := bkproto.AppendFrame(nil, &bkproto.Request{Header: bkproto.NewHeader(bkproto.OperationType_START_TLS, 1),
			StartTLSRequest: &bkproto.StartTLSRequest{}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(append(frame, garbage...)); err != nil {
			t.Fatal(err)
		}
		_ = nc.SetReadDeadline(time.Now().Add(testhost.Scale(30 * time.Second)))
		resp, err := bkproto.ReadFrame(nc, nil, 1<<20)
		if err != nil {
			t.Fatalf("START_TLS answer: %v", err)
		}
		if r, _ := bkproto.DecodeResponse(resp); r.GetStatus() != bkproto.StatusCode_EOK {
			t.Fatalf("START_TLS answered %v", r.GetStatus())
		}
		// The bookie closes the connection: a TLS alert, perhaps, then EOF
		// (or a reset), long before the test's deadline.
		_, err = io.Copy(io.Discard, nc)
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("garbage %q: connection not closed: %v", garbage, err)
		}
		addEntries(t, good, 9, int64(len(garbage)), int64(len(garbage))+1)
	}
}

// TestTLSReload: with tlsCertFilesRefreshDurationSeconds a renewed
// certificate written over the old files is served to the next
// handshake, without a restart.
func TestTLSReload(t *testing.T) {
	p := newPKI(t)
	s := bookietlstest.Bookie(p.bookie, p.ca, false)
	s.CertFilesRefresh = time.Nanosecond // every handshake looks
	b := tlsBookie(t, s)
	newCA := bookietlstest.CA(t, p.dir, "new-ca")
	if _, err := dialTLS(t, b, bookietlstest.Client(newCA, nil), false); err == nil {
		t.Fatal("a client trusting only the new CA was served before the renewal")
	}
	renewed := bookietlstest.Issue(t, t.TempDir(), "bookie", newCA, bookietlstest.Options{})
	for _, f := range [][2]string{{renewed.KeyPEM, p.bookie.KeyPEM}, {renewed.CertPEM, p.bookie.CertPEM}} {
		data, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f[1], data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := mustDialTLS(t, b, bookietlstest.Client(newCA, nil), false)
	addEntries(t, c, 1, 0, 1)
	if _, err := dialTLS(t, b, bookietlstest.Client(p.ca, nil), false); err == nil {
		t.Fatal("a client trusting only the old CA was served after the renewal")
	}
}

// TestTLSStartRefused: a bookie whose stores cannot be loaded does not
// start.
func TestTLSStartRefused(t *testing.T) {
	p := newPKI(t)
	pem := func(key, cert string) bookietls.Settings {
		return bookietls.Settings{Enabled: true, KeyStoreType: "PEM", KeyStore: key, CertificatePath: cert}
	}
	auth := pem(p.bookie.KeyPEM, p.bookie.CertPEM)
	auth.ClientAuthentication = true
	gap := pem(p.bookie.KeyPEM, p.bookie.CertPEM)
	gap.EnabledProtocols = []string{"TLSv1.1", "TLSv1.3"}
	for _, tt := range []struct {
		name string
		s    bookietls.Settings
		want string // a part of the error: the key at fault
	}{
		{"no key store", bookietls.Settings{Enabled: true}, "tlsKeyStore: not set"},
		{"PEM without certificate", pem(p.bookie.KeyPEM, ""), "tlsCertificatePath"},
		{"client auth, no trust", auth, "tlsTrustStore: not set"},
		{"missing file", pem(p.dir+"/nope.key", p.bookie.CertPEM), "tlsKeyStore: open "},
		{"key and cert mismatch", pem(p.client.KeyPEM, p.bookie.CertPEM), "no certificate matches the private key"},
		{"a protocol gap", gap, "tlsEnabledProtocols"},
	} {
		e := newEnv(t, false)
		e.tweak = func(c *Config) { c.TLS = tt.s }
		if _, err := New(e.config()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error with %q", tt.name, err, tt.want)
		}
	}
}
