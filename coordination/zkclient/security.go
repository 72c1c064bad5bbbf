package zkclient

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"

	"keeper/coordination/clienttls"
	"keeper/coordination/jaas"
	"keeper/coordination/sasl"
	"keeper/coordination/zoocfg"
)

// maxJAASBytes bounds the JAAS file read into memory: real ones are a few
// hundred bytes.
const maxJAASBytes = 1 << 20

// Security is a client's TLS and SASL, built from its configuration
// (zoocfg.ParseClientSecurity), for Options.TLS and Options.SASL.
type Security struct {
	TLS  *tls.Config
	SASL func() (SASLClient, error)
}

// Apply sets o's TLS and SASL.
func (s Security) Apply(o *Options) {
	o.TLS, o.SASL = s.TLS, s.SASL
}

// NewSecurity loads what cs names: the key and trust stores when
// zookeeper.client.secure is true, and the JAAS file's login section when
// SASL is on. Everything is read now, so a missing file or a wrong store
// password fails at start, not at the first connection. A login section
// that asks for Kerberos (Krb5LoginModule) is refused: keeper's clients
// authenticate with DIGEST-MD5 only.
func NewSecurity(cs zoocfg.ClientSecurity) (Security, error) {
	var s Security
	if cs.Secure {
		cfg, err := clientTLS(cs)
		if err != nil {
			return Security{}, err
		}
		s.TLS = cfg
	}
	if cs.SASLEnabled() {
		user, password, err := clientCredentials(cs)
		if err != nil {
			return Security{}, err
		}
		s.SASL = DigestMD5(user, password)
	}
	return s, nil
}

// DigestMD5 returns an Options.SASL that authenticates as user with
// password over DIGEST-MD5, as the Java client does (the digest-uri
// zookeeper/zk-sasl-md5, the user as authorization id).
func DigestMD5(user, password string) func() (SASLClient, error) {
	return func() (SASLClient, error) {
		cfg := &sasl.DigestMD5ClientConfig{Protocol: sasl.ZooKeeperProtocol, ServerName: sasl.ZooKeeperServerName,
			Username: user, Password: password, Entropy: rand.Reader}
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		return sasl.NewDigestMD5Client(cfg), nil
	}
}

// clientTLS builds the client's tls.Config from the zookeeper.ssl.* keys.
func clientTLS(cs zoocfg.ClientSecurity) (*tls.Config, error) {
	const prefix = "zookeeper.ssl."
	cfg := &tls.Config{}
	key, names := prefix+"enabledProtocols", cs.EnabledProtocols
	if names == nil {
		key, names = prefix+"protocol", []string{cs.Protocol}
		if cs.Protocol == "" {
			names = []string{clienttls.DefaultProtocol}
		}
	}
	lo, hi, err := clienttls.VersionRange(key, names)
	if err != nil {
		return nil, err
	}
	cfg.MinVersion, cfg.MaxVersion = lo, hi
	if cs.CipherSuites != nil {
		if cfg.CipherSuites, err = clienttls.CipherSuiteIDs(prefix+"ciphersuites", key, cs.CipherSuites, lo, hi); err != nil {
			return nil, err
		}
	}
	store := func(k string, s zoocfg.TLSStore) clienttls.Store {
		return clienttls.Store{Key: "zookeeper.ssl." + k, Location: s.Location, Password: s.Password,
			PasswordPath: s.PasswordPath, Type: s.Type}
	}
	if cs.KeyStore.Location != "" {
		cert, err := clienttls.LoadKeyPair(store("keyStore", cs.KeyStore))
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	var pool *x509.CertPool // nil: the system's roots
	if cs.TrustStore.Location != "" {
		certs, err := clienttls.LoadTrusted(store("trustStore", cs.TrustStore))
		if err != nil {
			return nil, err
		}
		pool = x509.NewCertPool()
		for _, c := range certs {
			pool.AddCert(c)
		}
	}
	cfg.RootCAs = pool
	if !cs.HostnameVerification {
		// The chain must still lead to the trust store; only the name
		// check is off, as zookeeper.ssl.hostnameVerification=false asks.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(st tls.ConnectionState) error { return verifyChain(st, pool) }
	}
	return cfg, nil
}

// verifyChain checks the server's certificate chain against roots (nil:
// the system's), without its name.
func verifyChain(st tls.ConnectionState, roots *x509.CertPool) error {
	if len(st.PeerCertificates) == 0 {
		return errors.New("the server sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range st.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := st.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

// clientCredentials reads the DIGEST-MD5 user and password from the JAAS
// file's login section.
func clientCredentials(cs zoocfg.ClientSecurity) (user, password string, err error) {
	const key = "java.security.auth.login.config"
	f, err := os.Open(cs.LoginConfig)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", key, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxJAASBytes+1))
	if err != nil {
		return "", "", fmt.Errorf("%s: %s: %w", key, cs.LoginConfig, err)
	}
	if len(data) > maxJAASBytes {
		return "", "", fmt.Errorf("%s: %s: larger than %d bytes", key, cs.LoginConfig, maxJAASBytes)
	}
	conf, err := jaas.Parse(data, func(name string) (string, bool) {
		v, ok := cs.JVMProperties[name]
		return v, ok
	})
	if err != nil {
		return "", "", fmt.Errorf("%s: %s: %w", key, cs.LoginConfig, err)
	}
	user, password, ok, found, err := conf.Credentials(cs.SASLSection)
	switch {
	case err != nil:
		return "", "", fmt.Errorf("%s: %s: %w (GSSAPI from keeper's clients is not implemented)", key, cs.LoginConfig, err)
	case !ok:
		return "", "", fmt.Errorf("%s: %s: no section %s (zookeeper.sasl.clientconfig)", key, cs.LoginConfig, cs.SASLSection)
	case !found:
		return "", "", fmt.Errorf("%s: %s: section %s names no username", key, cs.LoginConfig, cs.SASLSection)
	}
	return user, password, nil
}
