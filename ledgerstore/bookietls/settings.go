// Package bookietls secures connections between bookies and ledger
// clients the way BookKeeper's TLSContextFactory does (docs/bookie-tls.md):
// a client opens a plain connection, sends a v3 START_TLS request, the
// bookie answers EOK in plain text, and both then run a TLS handshake on the
// same socket. This package turns BookKeeper's tls* settings (and the
// client's clientKeyStore*/clientTrustStore* spellings) into the
// tls.Config of each side, loading key and trust stores with
// coordination/clienttls, and reloads them when
// tlsCertFilesRefreshDurationSeconds says so.
package bookietls

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FactoryClass is BookKeeper's TLS provider factory, the one value of
// tlsProviderFactoryClass keeper accepts: setting it turns TLS on.
const FactoryClass = "org.apache.bookkeeper.tls.TLSContextFactory"

// DefaultStoreType is BookKeeper's default tlsKeyStoreType and
// tlsTrustStoreType.
const DefaultStoreType = "JKS"

// DefaultHandshakeTimeout bounds START_TLS and the handshake after it:
// BookKeeper's client waits startTLSTimeoutSecs (10) for them, and the
// bookie's TLS handler gives a handshake as long.
const DefaultHandshakeTimeout = 10 * time.Second

// Settings are BookKeeper's TLS keys for one side of a connection. The
// zero value is TLS off.
type Settings struct {
	// Enabled is tlsProviderFactoryClass set to FactoryClass.
	Enabled bool
	// KeyStoreType is tlsKeyStoreType (client: clientKeyStoreType): PEM,
	// PKCS12 or JKS ("" is JKS).
	KeyStoreType string
	// KeyStore is tlsKeyStore (client: clientKeyStore): the key store, or
	// with PEM the private key file.
	KeyStore string
	// KeyStorePasswordPath is tlsKeyStorePasswordPath (client:
	// clientKeyStorePasswordPath): a file holding the key store's
	// password, trimmed of surrounding white space as BookKeeper trims it.
	KeyStorePasswordPath string
	// TrustStoreType, TrustStore and TrustStorePasswordPath are the trust
	// store's (tlsTrustStore*, client: clientTrustStore*); with PEM the
	// trust store is a file of CA certificates.
	TrustStoreType, TrustStore, TrustStorePasswordPath string
	// CertificatePath is tlsCertificatePath: with a PEM key store, the
	// certificate chain that goes with the key.
	CertificatePath string
	// ClientAuthentication is tlsClientAuthentication. On a bookie: a
	// client that starts TLS must present a certificate the trust store
	// vouches for. On a client: present the key store's certificate.
	ClientAuthentication bool
	// HostnameVerification is tlsHostnameVerificationEnabled (clients
	// only): the bookie's certificate must name the host dialled.
	HostnameVerification bool
	// EnabledCipherSuites and EnabledProtocols are tlsEnabledCipherSuites
	// and tlsEnabledProtocols, Java's names; nil leaves Go's defaults
	// (TLSv1.2 and TLSv1.3 with their secure suites), as BookKeeper leaves
	// the JDK's.
	EnabledCipherSuites, EnabledProtocols []string
	// CertFilesRefresh is tlsCertFilesRefreshDurationSeconds: at most this
	// often a handshake checks whether a store or password file changed,
	// and reloads them if one did. 0 never reloads.
	CertFilesRefresh time.Duration
	// HandshakeTimeout bounds START_TLS and the handshake (0:
	// DefaultHandshakeTimeout; a client's startTLSTimeoutSecs).
	HandshakeTimeout time.Duration
}

// Side says which spelling of the store keys a configuration uses.
type Side int

const (
	// Bookie reads tlsKeyStore* and tlsTrustStore* (ServerConfiguration).
	Bookie Side = iota
	// Client reads clientKeyStore* and clientTrustStore* first, then the
	// tls* keys (ClientConfiguration); a bookie's own clients (autorecovery,
	// the admin API) read its bookkeeper.conf this way, as BookKeeper's
	// ClientConfiguration built from a ServerConfiguration does.
	Client
)

// Keys are the configuration keys Parse reads, for callers that report
// unused keys.
func Keys(side Side) []string {
	keys := []string{"tlsProviderFactoryClass", "tlsProvider", "tlsKeyStoreType", "tlsKeyStore",
		"tlsKeyStorePasswordPath", "tlsTrustStoreType", "tlsTrustStore", "tlsTrustStorePasswordPath",
		"tlsCertificatePath", "tlsClientAuthentication", "tlsEnabledCipherSuites", "tlsEnabledProtocols",
		"tlsCertFilesRefreshDurationSeconds"}
	if side == Client {
		keys = append(keys, "clientKeyStoreType", "clientKeyStore", "clientKeyStorePasswordPath",
			"clientTrustStoreType", "clientTrustStore", "clientTrustStorePasswordPath",
			"tlsHostnameVerificationEnabled", "startTLSTimeoutSecs")
	}
	return keys
}

// Parse reads the TLS keys of a BookKeeper configuration through get,
// which returns a key's trimmed value and whether it is present. An
// invalid value is an error naming its key; so is a value keeper cannot
// honour (an unknown provider or factory class, a store type it does not
// read). What a side needs and lacks (a key store, a trust store) is
// New's to report, since a bookie's own clients need theirs only if it
// runs any.
func Parse(side Side, get func(key string) (string, bool)) (Settings, error) {
	var s Settings
	if v, ok := get("tlsProviderFactoryClass"); ok && v != "" {
		if v != FactoryClass {
			return Settings{}, fmt.Errorf("tlsProviderFactoryClass: %q: keeper provides TLS as %s does, and no other factory", v, FactoryClass)
		}
		s.Enabled = true
	}
	if v, ok := get("tlsProvider"); ok && v != "" {
		// BookKeeper picks its JDK or OpenSSL engine; keeper has one.
		if !strings.EqualFold(v, "JDK") && !strings.EqualFold(v, "OpenSSL") {
			return Settings{}, fmt.Errorf("tlsProvider: %q: want JDK or OpenSSL", v)
		}
	}
	str := func(dst *string, keys ...string) {
		for _, k := range keys {
			if v, ok := get(k); ok && v != "" {
				*dst = v
				return
			}
		}
	}
	if side == Client {
		str(&s.KeyStoreType, "clientKeyStoreType", "tlsKeyStoreType")
		str(&s.KeyStore, "clientKeyStore", "tlsKeyStore")
		str(&s.KeyStorePasswordPath, "clientKeyStorePasswordPath", "tlsKeyStorePasswordPath")
		str(&s.TrustStoreType, "clientTrustStoreType", "tlsTrustStoreType")
		str(&s.TrustStore, "clientTrustStore", "tlsTrustStore")
		str(&s.TrustStorePasswordPath, "clientTrustStorePasswordPath", "tlsTrustStorePasswordPath")
	} else {
		str(&s.KeyStoreType, "tlsKeyStoreType")
		str(&s.KeyStore, "tlsKeyStore")
		str(&s.KeyStorePasswordPath, "tlsKeyStorePasswordPath")
		str(&s.TrustStoreType, "tlsTrustStoreType")
		str(&s.TrustStore, "tlsTrustStore")
		str(&s.TrustStorePasswordPath, "tlsTrustStorePasswordPath")
	}
	str(&s.CertificatePath, "tlsCertificatePath")
	var err error
	boolean := func(key string, dst *bool) {
		v, ok := get(key)
		if !ok || v == "" || err != nil {
			return
		}
		switch strings.ToLower(v) {
		case "true":
			*dst = true
		case "false":
			*dst = false
		default:
			err = fmt.Errorf("%s: %q is not true or false", key, v)
		}
	}
	boolean("tlsClientAuthentication", &s.ClientAuthentication)
	if side == Client {
		boolean("tlsHostnameVerificationEnabled", &s.HostnameVerification)
	}
	seconds := func(key string, dst *time.Duration, zeroOK bool) {
		v, ok := get(key)
		if !ok || v == "" || err != nil {
			return
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || n < 0 || n > int64(365*24*time.Hour/time.Second) || (n == 0 && !zeroOK) {
			err = fmt.Errorf("%s: %q is not a number of seconds", key, v)
			return
		}
		*dst = time.Duration(n) * time.Second
	}
	seconds("tlsCertFilesRefreshDurationSeconds", &s.CertFilesRefresh, true)
	if side == Client {
		seconds("startTLSTimeoutSecs", &s.HandshakeTimeout, false)
	}
	if err != nil {
		return Settings{}, err
	}
	if !s.Enabled {
		// BookKeeper turns TLS on only with tlsProviderFactoryClass and
		// otherwise runs in plain text whatever these say: a protection
		// asked for but not given is refused instead.
		for _, k := range []struct {
			key string
			on  bool
		}{{"tlsClientAuthentication", s.ClientAuthentication}, {"tlsHostnameVerificationEnabled", s.HostnameVerification}} {
			if k.on {
				return Settings{}, fmt.Errorf("%s=true but tlsProviderFactoryClass is not set, so TLS is off: set tlsProviderFactoryClass=%s", k.key, FactoryClass)
			}
		}
	}
	s.EnabledCipherSuites = list(get, "tlsEnabledCipherSuites")
	s.EnabledProtocols = list(get, "tlsEnabledProtocols")
	for _, t := range []struct{ key, v string }{{"tlsKeyStoreType", s.KeyStoreType}, {"tlsTrustStoreType", s.TrustStoreType}} {
		if _, err := storeType(t.key, t.v); err != nil {
			return Settings{}, err
		}
	}
	return s, nil
}

// list reads a comma-separated list; absent or empty is nil.
func list(get func(string) (string, bool), key string) []string {
	v, ok := get(key)
	if !ok {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// storeType returns a store type in BookKeeper's spelling: PEM, PKCS12 or
// JKS; "" is JKS.
func storeType(key, v string) (string, error) {
	if v == "" {
		return DefaultStoreType, nil
	}
	switch t := strings.ToUpper(v); t {
	case "PEM", "PKCS12", "JKS":
		return t, nil
	}
	return "", fmt.Errorf("%s: %q: want PEM, PKCS12 or JKS", key, v)
}

// check reports what the side needs and lacks, as BookKeeper's
// TLSContextFactory refuses it: a bookie needs its key (and with PEM its
// certificate), and a trust store when it authenticates clients; a client
// needs a trust store, and its key when it authenticates itself.
func (s Settings) check(side Side) error {
	keyKey, trustKey := "tlsKeyStore", "tlsTrustStore"
	if side == Client {
		keyKey, trustKey = "clientKeyStore", "clientTrustStore"
	}
	needKey := side == Bookie || s.ClientAuthentication
	needTrust := side == Client || s.ClientAuthentication
	if needKey && s.KeyStore == "" {
		return errors.New(keyKey + ": not set; TLS needs the key and certificate this side presents")
	}
	if kt, _ := storeType("", s.KeyStoreType); needKey && kt == "PEM" && s.CertificatePath == "" {
		return errors.New("tlsCertificatePath: not set; a PEM key store needs the certificate chain in its own file")
	}
	if needTrust && s.TrustStore == "" {
		if side == Client {
			return errors.New(trustKey + ": not set; a TLS client needs the certificates that vouch for bookies")
		}
		return errors.New(trustKey + ": not set; tlsClientAuthentication needs the certificates that vouch for clients")
	}
	return nil
}

// UnknownKey returns the first key, in sorted order, of a TLS family
// (tls*, clientKeyStore*, clientTrustStore*) that Parse does not read:
// a configuration that asks for a TLS feature keeper lacks is refused
// rather than run without it.
func UnknownKey(keys []string) (string, bool) {
	known := Keys(Client)
	var unknown []string
	for _, k := range keys {
		if slices.Contains(known, k) {
			continue
		}
		for _, prefix := range []string{"tls", "clientKeyStore", "clientTrustStore"} {
			if strings.HasPrefix(k, prefix) {
				unknown = append(unknown, k)
			}
		}
	}
	if len(unknown) == 0 {
		return "", false
	}
	slices.Sort(unknown)
	return unknown[0], true
}
