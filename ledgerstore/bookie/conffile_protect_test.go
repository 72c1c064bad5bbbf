package bookie

import (
	"slices"
	"strings"
	"testing"
)

// refusedConfKeys walks every protective bookkeeper.conf key keeper
// refuses, with a value that asks for the protection.
var refusedConfKeys = []struct{ key, value, feature string }{
	{"tlsFutureKnob", "on", tlsFeature + " setting tlsFutureKnob"},
	{"clientKeyStoreAlias", "bk", tlsFeature + " setting clientKeyStoreAlias"},
	{"clientTrustStoreAlgorithm", "PKIX", tlsFeature + " setting clientTrustStoreAlgorithm"},
	{"httpServerTlsEnable", "true", httpsFeature},
	{"httpServerKeyStorePath", "/etc/bk/http.jks", httpsFeature},
	{"httpServerKeyStorePassword", "hunter2", httpsFeature},
	{"httpServerTrustStorePath", "/etc/bk/http-trust.jks", httpsFeature},
	{"httpServerTrustStorePassword", "hunter2", httpsFeature},
	{"bookieAuthProviderFactoryClass", "org.apache.bookkeeper.sasl.SASLBookieAuthProviderFactory", authFeature},
	{"clientAuthProviderFactoryClass", "org.apache.bookkeeper.sasl.SASLClientProviderFactory", authFeature},
	{"authorizedRoles", "bookies", "certificate role authorization"},
	{"permittedStartupUsers", "bookkeeper", "restricting which users may start the bookie"},
	{"permittedStartupUsers", "", "restricting which users may start the bookie"},
	{"zkEnableSecurity", "true", zkACLFeature},
	{"dataIntegrityChecking", "true", integrityCheck},
	{"dataIntegrityStampMissingCookies", "true", integrityCheck},
	{"localConsistencyCheckOnStartup", "true", "the local consistency check at start"},
}

func TestProtectiveConfKeysRefused(t *testing.T) {
	for _, tt := range refusedConfKeys {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			props := map[string]string{"bookiePort": "3181", "journalDirectories": "/j", tt.key: tt.value}
			_, _, err := ConfigFromProperties(props)
			want := "bookkeeper.conf: " + tt.key + ": keeper does not support " + tt.feature + " yet"
			if err == nil || err.Error() != want {
				t.Fatalf("got %v, want %q", err, want)
			}
		})
	}
}

// TestRefusedConfKeysCoverProtections checks that refusedConfKeys names
// every entry of protections and every family of protectedPrefixes.
func TestRefusedConfKeysCoverProtections(t *testing.T) {
	var listed []string
	for _, tt := range refusedConfKeys {
		listed = append(listed, tt.key)
	}
	for key := range protections {
		if !slices.Contains(listed, key) {
			t.Errorf("protection %s is not in refusedConfKeys", key)
		}
	}
	for _, prefix := range protectedPrefixes {
		if !slices.ContainsFunc(listed, func(k string) bool { _, exact := protections[k]; return !exact && strings.HasPrefix(k, prefix) }) {
			t.Errorf("no key of the family %s* is in refusedConfKeys", prefix)
		}
	}
}

// TestStockConfAccepted reads the keys BookKeeper's own bk_server.conf
// leaves uncommented: the protective ones there have their off value (or
// none) and must be accepted, and not reported as ignored.
func TestStockConfAccepted(t *testing.T) {
	stock := `bookiePort=3181
extraServerComponents=
httpServerEnabled=false
httpServerPort=8080
httpServerHost=0.0.0.0
httpServerClass=org.apache.bookkeeper.http.vertx.VertxHttpServer
httpServerTlsEnable=false
httpServerKeyStorePath=
httpServerKeyStorePassword=
httpServerTrustStorePath=
httpServerTrustStorePassword=
journalDirectories=/tmp/bk-txn
ledgerDirectories=/tmp/bk-data
metadataServiceUri=zk+hierarchical://localhost:2181/ledgers
zkServers=localhost:2181
zkTimeout=10000
zkEnableSecurity=false
statsProviderClass=org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider
tlsClientAuthentication=False
tlsCertFilesRefreshDurationSeconds=0
tlsKeyStore=
`
	props, err := ParseProperties([]byte(stock))
	if err != nil {
		t.Fatal(err)
	}
	_, ignored, err := ConfigFromProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ignored {
		if _, ok := protectionOf(k); ok {
			t.Errorf("protective key %s reported as ignored", k)
		}
	}
	if !slices.Contains(ignored, "statsProviderClass") {
		t.Errorf("ignored = %v, want statsProviderClass among them", ignored)
	}
}

func TestProtectiveConfKeyInvalid(t *testing.T) {
	_, _, err := ConfigFromProperties(map[string]string{"zkEnableSecurity": "yes"})
	if want := `bookkeeper.conf: zkEnableSecurity: "yes" is not true or false`; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}
