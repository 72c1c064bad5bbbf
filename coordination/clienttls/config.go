package clienttls

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
)

// ClientAuth is ssl.clientAuth: whether the server asks clients for a
// certificate.
type ClientAuth int

const (
	// Need requires a certificate the trust store vouches for (ZooKeeper's
	// default).
	Need ClientAuth = iota
	// Want asks for one; a client without one is served, a client with a
	// certificate the trust store does not vouch for is refused.
	Want
	// None does not ask.
	None
)

// ParseClientAuth reads ssl.clientAuth as ZooKeeper does: none, want or
// need in any case; empty means need.
func ParseClientAuth(v string) (ClientAuth, error) {
	switch strings.ToUpper(v) {
	case "", "NEED":
		return Need, nil
	case "WANT":
		return Want, nil
	case "NONE":
		return None, nil
	}
	return 0, fmt.Errorf("ssl.clientAuth: %q: want none, want or need", v)
}

func (a ClientAuth) tls() tls.ClientAuthType {
	switch a {
	case Want:
		return tls.VerifyClientCertIfGiven
	case None:
		return tls.NoClientCert
	}
	return tls.RequireAndVerifyClientCert
}

// DefaultProtocol is ZooKeeper 3.8's ssl.protocol default; with
// ssl.enabledProtocols unset it is the only version enabled.
const DefaultProtocol = "TLSv1.2"

// protocolVersions maps Java's protocol names to Go's versions. SSLv3 and
// SSLv2Hello, which Java knows, Go cannot speak.
var protocolVersions = map[string]uint16{
	"TLSv1":   tls.VersionTLS10,
	"TLSv1.1": tls.VersionTLS11,
	"TLSv1.2": tls.VersionTLS12,
	"TLSv1.3": tls.VersionTLS13,
}

// versionRange turns the enabled protocols into Go's MinVersion and
// MaxVersion, naming zoo.cfg's keys in errors.
func versionRange(prefix, protocol string, enabled []string) (uint16, uint16, error) {
	key, names := prefix+"enabledProtocols", enabled
	if names == nil {
		key, names = prefix+"protocol", []string{protocol}
		if protocol == "" {
			names = []string{DefaultProtocol}
		}
	}
	return VersionRange(key, names)
}

// VersionRange turns Java's protocol names (TLSv1 to TLSv1.3) into Go's
// MinVersion and MaxVersion; key names the setting in errors. Go enables
// a contiguous range, so a list with a gap is refused rather than widened,
// and so is a name Go cannot speak (SSLv3, SSLv2Hello).
func VersionRange(key string, names []string) (uint16, uint16, error) {
	var versions []uint16
	var unknown []string
	for _, n := range names {
		v, ok := protocolVersions[n]
		if !ok {
			unknown = append(unknown, n)
			continue
		}
		if !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
	}
	if len(unknown) > 0 {
		return 0, 0, fmt.Errorf("%s: keeper cannot enable %s: want TLSv1, TLSv1.1, TLSv1.2 or TLSv1.3", key, strings.Join(unknown, ", "))
	}
	if len(versions) == 0 {
		return 0, 0, fmt.Errorf("%s: no protocol enabled", key)
	}
	slices.Sort(versions)
	lo, hi := versions[0], versions[len(versions)-1]
	if int(hi-lo) != len(versions)-1 {
		return 0, 0, fmt.Errorf("%s: %s: keeper enables a range of TLS versions and cannot leave a gap in it", key, strings.Join(names, ","))
	}
	return lo, hi, nil
}

// defaultCipherSuites is ZooKeeper 3.8's default ssl.ciphersuites on Java 9
// and later (AES-GCM first, then AES-CBC, all ECDHE), less the two
// AES_256_CBC_SHA384 suites Go does not implement.
var defaultCipherSuites = []string{
	"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
	"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
	"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
}

// tls13Suites are TLS 1.3's suites, which Go always enables together with
// TLS 1.3 and does not let a configuration choose among.
var tls13Suites = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}

// javaAliases are Java's older names for suites Go names by their IANA
// name.
var javaAliases = map[string]string{
	"SSL_RSA_WITH_3DES_EDE_CBC_SHA": "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
	"SSL_RSA_WITH_RC4_128_SHA":      "TLS_RSA_WITH_RC4_128_SHA",
}

// cipherSuites maps ssl.ciphersuites (prefix+"ciphersuites" in errors)
// to Go's suite ids; nil names means ZooKeeper's default list.
func cipherSuites(prefix string, names []string, minVersion, maxVersion uint16) ([]uint16, error) {
	explicit := names != nil
	if !explicit {
		names = defaultCipherSuites
	}
	return suiteIDs(prefix+"ciphersuites", prefix+"enabledProtocols", names, explicit, minVersion, maxVersion)
}

// CipherSuiteIDs maps a list of Java's cipher suite names to Go's TLS 1.2
// and earlier suite ids. Java names are IANA names, as Go's are, so the
// map is by name. Names Go cannot provide are refused, all of them named.
// With TLS 1.3 enabled the list must name all three TLS 1.3 suites, since
// Go cannot enable fewer. key names the suites' setting in errors,
// protocolsKey the protocols'.
func CipherSuiteIDs(key, protocolsKey string, names []string, minVersion, maxVersion uint16) ([]uint16, error) {
	return suiteIDs(key, protocolsKey, names, true, minVersion, maxVersion)
}

func suiteIDs(key, protocolsKey string, names []string, explicit bool, minVersion, maxVersion uint16) ([]uint16, error) {
	byName := map[string]uint16{}
	for _, s := range tls.CipherSuites() {
		byName[s.Name] = s.ID
	}
	for _, s := range tls.InsecureCipherSuites() {
		byName[s.Name] = s.ID
	}
	var ids []uint16
	var unknown []string
	var named13 int
	for _, n := range names {
		if slices.Contains(tls13Suites, n) {
			named13++
			continue
		}
		if n == "TLS_EMPTY_RENEGOTIATION_INFO_SCSV" {
			continue // a signal, not a suite; Go always sends it
		}
		if alias, ok := javaAliases[n]; ok {
			n = alias
		}
		id, ok := byName[n]
		if !ok {
			unknown = append(unknown, n)
			continue
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%s: keeper cannot provide %s", key, strings.Join(unknown, ", "))
	}
	if explicit && maxVersion >= tls.VersionTLS13 && named13 != len(tls13Suites) {
		return nil, fmt.Errorf("%s: with TLSv1.3 enabled, keeper always offers %s; list all three, or leave TLSv1.3 out of %s", key, strings.Join(tls13Suites, ", "), protocolsKey)
	}
	if minVersion < tls.VersionTLS13 && len(ids) == 0 {
		return nil, fmt.Errorf("%s: lists no suite for the TLS versions before TLSv1.3 that the enabled protocols include", key)
	}
	return ids, nil
}
