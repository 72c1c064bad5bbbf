package bookie

import (
	"strings"
	"testing"
	"time"

	"keeper/ledgerstore/bookietls"
)

// TestTLSConfKeys: BookKeeper's TLS keys in bookkeeper.conf, accepted
// (and read into the bookie's and its clients' settings) or refused with
// the key named.
func TestTLSConfKeys(t *testing.T) {
	const factory = "tlsProviderFactoryClass=" + bookietls.FactoryClass
	for _, tt := range []struct {
		conf    string
		refused string // "" accepted; else a part of the error
		check   func(t *testing.T, c Config)
	}{
		{conf: "tlsProviderFactoryClass=", check: func(t *testing.T, c Config) {
			if c.TLS.Enabled || c.ClientTLS.Enabled {
				t.Fatal("TLS on without a factory class")
			}
		}},
		{conf: factory + "\ntlsKeyStoreType=PEM\ntlsKeyStore=/k.pem\ntlsCertificatePath=/c.pem\ntlsClientAuthentication=true\n" +
			"tlsTrustStoreType=PKCS12\ntlsTrustStore=/t.p12\ntlsTrustStorePasswordPath=/t.pass\ntlsProvider=OpenSSL\n" +
			"tlsEnabledProtocols=TLSv1.2,TLSv1.3\ntlsEnabledCipherSuites=TLS_AES_128_GCM_SHA256\ntlsCertFilesRefreshDurationSeconds=300",
			check: func(t *testing.T, c Config) {
				s := c.TLS
				if !s.Enabled || s.KeyStoreType != "PEM" || s.KeyStore != "/k.pem" || s.CertificatePath != "/c.pem" ||
					!s.ClientAuthentication || s.TrustStore != "/t.p12" || s.TrustStorePasswordPath != "/t.pass" ||
					s.CertFilesRefresh != 300*time.Second || len(s.EnabledProtocols) != 2 || len(s.EnabledCipherSuites) != 1 {
					t.Fatalf("bookie settings %+v", s)
				}
			}},
		// The bookie's own clients read clientKeyStore* before tlsKeyStore*.
		{conf: factory + "\ntlsKeyStore=/server.jks\nclientKeyStore=/client.jks\nclientKeyStoreType=PKCS12\ntlsTrustStore=/t.jks\n" +
			"tlsHostnameVerificationEnabled=true\nclientTrustStorePasswordPath=/ct.pass",
			check: func(t *testing.T, c Config) {
				s := c.ClientTLS
				if !s.Enabled || s.KeyStore != "/client.jks" || s.KeyStoreType != "PKCS12" || s.TrustStore != "/t.jks" ||
					s.TrustStorePasswordPath != "/ct.pass" || !s.HostnameVerification || c.TLS.KeyStore != "/server.jks" {
					t.Fatalf("client settings %+v", s)
				}
			}},
		{conf: "tlsProviderFactoryClass=org.example.MyFactory", refused: "tlsProviderFactoryClass"},
		{conf: factory + "\ntlsProvider=BoringSSL", refused: "tlsProvider"},
		{conf: factory + "\ntlsKeyStoreType=BCFKS", refused: "tlsKeyStoreType"},
		{conf: factory + "\ntlsTrustStoreType=jceks", refused: "tlsTrustStoreType"},
		{conf: factory + "\ntlsClientAuthentication=yes", refused: "tlsClientAuthentication"},
		{conf: factory + "\ntlsCertFilesRefreshDurationSeconds=-1", refused: "tlsCertFilesRefreshDurationSeconds"},
		// Protection asked for with TLS off is refused, not ignored.
		{conf: "tlsClientAuthentication=true", refused: "tlsProviderFactoryClass is not set"},
		{conf: "tlsHostnameVerificationEnabled=true", refused: "tlsProviderFactoryClass is not set"},
		{conf: factory + "\ntlsKeyStoreAlias=bk", refused: "tlsKeyStoreAlias"},
	} {
		t.Run(tt.conf, func(t *testing.T) {
			props, err := ParseProperties([]byte("journalDirectories=/j\n" + tt.conf))
			if err != nil {
				t.Fatal(err)
			}
			c, ignored, err := ConfigFromProperties(props)
			if tt.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refused) {
					t.Fatalf("got %v, want an error naming %s", err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range ignored {
				if strings.HasPrefix(k, "tls") || strings.HasPrefix(k, "client") {
					t.Errorf("%s reported as ignored", k)
				}
			}
			tt.check(t, c)
		})
	}
}
