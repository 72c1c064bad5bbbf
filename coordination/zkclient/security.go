package zkclient

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

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
	SASL func(addr string, remote net.Addr) (SASLClient, error)
}

// Apply sets o's TLS and SASL.
func (s Security) Apply(o *Options) {
	o.TLS, o.SASL = s.TLS, s.SASL
}

// NewSecurity loads what cs names: the key and trust stores when
// zookeeper.client.secure is true, and the JAAS file's login section when
// SASL is on. Everything is read now, so a missing file or a wrong store
// password fails at start, not at the first connection. A login section
// with a Krb5LoginModule authenticates with GSSAPI (kerberos.go): it logs
// in now, with its keytab or from its credential cache; one with a
// DigestLoginModule with DIGEST-MD5.
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
		conf, err := loginConfig(cs)
		if err != nil {
			return Security{}, err
		}
		if s.SASL, err = kerberosClient(cs, conf, time.Now()); err != nil {
			return Security{}, err
		}
		if s.SASL == nil {
			user, password, err := clientCredentials(cs, conf)
			if err != nil {
				return Security{}, err
			}
			s.SASL = DigestMD5(user, password)
		}
	}
	return s, nil
}

// DigestMD5 returns an Options.SASL that authenticates as user with
// password over DIGEST-MD5, as the Java client does (the digest-uri
// zookeeper/zk-sasl-md5, the user as authorization id).
func DigestMD5(user, password string) func(string, net.Addr) (SASLClient, error) {
	return func(string, net.Addr) (SASLClient, error) {
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

// loginConfig reads and parses the JAAS file, its ${name} expanded from
// the client's -D flags.
func loginConfig(cs zoocfg.ClientSecurity) (*jaas.Config, error) {
	f, err := os.Open(cs.LoginConfig)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loginConfigKey, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxJAASBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", loginConfigKey, cs.LoginConfig, err)
	}
	if len(data) > maxJAASBytes {
		return nil, fmt.Errorf("%s: %s: larger than %d bytes", loginConfigKey, cs.LoginConfig, maxJAASBytes)
	}
	conf, err := jaas.Parse(data, func(name string) (string, bool) {
		v, ok := cs.JVMProperties[name]
		return v, ok
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", loginConfigKey, cs.LoginConfig, err)
	}
	return conf, nil
}

// loginConfigKey names the JAAS file.
const loginConfigKey = "java.security.auth.login.config"

// clientCredentials reads the DIGEST-MD5 user and password from the JAAS
// file's login section.
func clientCredentials(cs zoocfg.ClientSecurity, conf *jaas.Config) (user, password string, err error) {
	user, password, ok, found, err := conf.Credentials(cs.SASLSection)
	switch {
	case err != nil:
		return "", "", fmt.Errorf("%s: %s: %w", loginConfigKey, cs.LoginConfig, err)
	case !ok:
		return "", "", fmt.Errorf("%s: %s: no section %s (zookeeper.sasl.clientconfig)", loginConfigKey, cs.LoginConfig, cs.SASLSection)
	case !found:
		return "", "", fmt.Errorf("%s: %s: section %s names no username", loginConfigKey, cs.LoginConfig, cs.SASLSection)
	}
	return user, password, nil
}
