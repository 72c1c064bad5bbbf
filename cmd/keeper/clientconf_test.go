package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"keeper/ledgerstore/bookie"
	"keeper/ledgerstore/bookietls"
	"keeper/ledgerstore/bookietls/bookietlstest"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// TestLedgerOverTLS: `keeper ledger write` and `read` with a BookKeeper
// client configuration that asks for TLS, against bookies that require a
// client certificate; without the certificate the write fails.
func TestLedgerOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca := bookietlstest.CA(t, dir, "ca")
	bk := bookietlstest.Issue(t, dir, "bookie", ca, bookietlstest.Options{})
	client := bookietlstest.Issue(t, dir, "client", ca, bookietlstest.Options{})
	cl := ledgertest.StartWith(t, 3, func(c *bookie.Config) { c.TLS = bookietlstest.Bookie(bk, ca, true) })
	base := "tlsProviderFactoryClass=" + bookietls.FactoryClass + "\nclientTrustStoreType=PEM\nclientTrustStore=" + ca.CertPEM + "\n"
	withCert := writeConf(t, dir, "client.conf", base+"tlsClientAuthentication=true\nclientKeyStoreType=PEM\nclientKeyStore="+
		client.KeyPEM+"\ntlsCertificatePath="+client.CertPEM+"\nuseV2WireProtocol=false\n")
	out := mustRunLedger(t, cl, "one\ntwo\n", "write", "--client-conf", withCert, "-E", "3", "-Qw", "3", "-Qa", "3", "--json")
	id, n := written(t, out)
	if n != "2" {
		t.Fatalf("wrote %s entries", n)
	}
	if got := mustRunLedger(t, cl, "", "read", id, "--client-conf", withCert); !strings.Contains(got, "two") {
		t.Fatalf("read over TLS: %q", got)
	}
	noCert := writeConf(t, dir, "nocert.conf", base)
	if out, err := runLedger(t, cl, "x\n", "write", "--client-conf", noCert, "-E", "3", "-Qw", "3", "-Qa", "3", "--add-timeout", "2s"); err == nil {
		t.Fatalf("write without a client certificate succeeded: %s", out)
	}
}

// TestClientConfRefused: a client configuration whose TLS keys keeper
// cannot honour is refused, naming the key.
func TestClientConfRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ conf, key string }{
		{"tlsProviderFactoryClass=com.example.Other", "tlsProviderFactoryClass"},
		{"tlsHostnameVerificationEnabled=true", "tlsProviderFactoryClass is not set"},
		{"tlsKeyStoreAlias=bk", "tlsKeyStoreAlias"},
		{"clientTrustStoreType=BCFKS", "tlsTrustStoreType"},
	} {
		f := clientConfFlag{path: writeConf(t, dir, "c.conf", tt.conf)}
		if _, err := f.tls(); err == nil || !strings.Contains(err.Error(), tt.key) {
			t.Errorf("%s: got %v, want an error naming %s", tt.conf, err, tt.key)
		}
	}
}

func writeConf(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
