package bookietls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"keeper/coordination/clienttls"
)

// maxPasswordBytes bounds a password file read into memory.
const maxPasswordBytes = 64 << 10

// Config hands out one side's tls.Config, reloading the store files as
// Settings.CertFilesRefresh says. It is safe for concurrent use.
type Config struct {
	s    Settings
	side Side
	log  *slog.Logger
	now  func() time.Time

	mu        sync.Mutex // guards the fields below
	cur       *tls.Config
	loaded    []fileState // the files cur was loaded from
	lastCheck time.Time   // when a handshake last looked at the files
}

// fileState is a file's stat, to tell that it changed.
type fileState struct {
	path    string
	mod     time.Time
	size    int64
	missing bool
}

// New checks s for side and loads its stores. An error names the key
// and the file, never a password. s must have Enabled set.
func New(side Side, s Settings, logger *slog.Logger) (*Config, error) {
	if !s.Enabled {
		return nil, errors.New("bookietls: TLS is not enabled (tlsProviderFactoryClass)")
	}
	if err := s.check(side); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Config{s: s, side: side, log: logger, now: time.Now}
	cur, err := c.load()
	if err != nil {
		return nil, err
	}
	c.cur, c.loaded, c.lastCheck = cur, c.stat(), c.now()
	return c, nil
}

// HandshakeTimeout is how long START_TLS and the handshake may take.
func (c *Config) HandshakeTimeout() time.Duration {
	if c.s.HandshakeTimeout > 0 {
		return c.s.HandshakeTimeout
	}
	return DefaultHandshakeTimeout
}

// Server returns the bookie's configuration for a handshake beginning
// now.
func (c *Config) Server() *tls.Config { return c.current() }

// Client returns the configuration for a handshake with the bookie at
// host (an address's host part, for hostname verification).
func (c *Config) Client(host string) *tls.Config {
	cfg := c.current().Clone()
	cfg.ServerName = host
	return cfg
}

// current returns the configuration for a handshake beginning now,
// reloading the files first when the refresh period has passed and one of
// them changed. A reload that fails keeps the configuration in use and
// logs why, as BookKeeper does.
func (c *Config) current() *tls.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s.CertFilesRefresh <= 0 || c.now().Sub(c.lastCheck) < c.s.CertFilesRefresh {
		return c.cur
	}
	c.lastCheck = c.now()
	states := c.stat()
	if sameStates(states, c.loaded) {
		return c.cur
	}
	cur, err := c.load()
	if err != nil {
		c.log.Warn("tls files changed but did not load; keeping the previous ones", "err", err)
		c.loaded = states // try again only after the next change
		return c.cur
	}
	c.log.Info("tls files reloaded", "keyStore", c.s.KeyStore, "trustStore", c.s.TrustStore)
	c.cur, c.loaded = cur, states
	return c.cur
}

// files are the files a reload watches, as BookKeeper watches them.
func (c *Config) files() []string {
	return []string{c.s.CertificatePath, c.s.KeyStore, c.s.KeyStorePasswordPath, c.s.TrustStore, c.s.TrustStorePasswordPath}
}

func (c *Config) stat() []fileState {
	var out []fileState
	for _, p := range c.files() {
		if p == "" {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			out = append(out, fileState{path: p, missing: true})
			continue
		}
		out = append(out, fileState{path: p, mod: fi.ModTime(), size: fi.Size()})
	}
	return out
}

func sameStates(a, b []fileState) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].path != b[i].path || a[i].missing != b[i].missing || !a[i].mod.Equal(b[i].mod) || a[i].size != b[i].size {
			return false
		}
	}
	return true
}

// load builds the side's tls.Config from the files.
func (c *Config) load() (*tls.Config, error) {
	s := c.s
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.EnabledProtocols != nil {
		lo, hi, err := clienttls.VersionRange("tlsEnabledProtocols", s.EnabledProtocols)
		if err != nil {
			return nil, err
		}
		cfg.MinVersion, cfg.MaxVersion = lo, hi
	}
	if s.EnabledCipherSuites != nil {
		hi := cfg.MaxVersion
		if hi == 0 {
			hi = tls.VersionTLS13
		}
		ids, err := clienttls.CipherSuiteIDs("tlsEnabledCipherSuites", "tlsEnabledProtocols", s.EnabledCipherSuites, cfg.MinVersion, hi)
		if err != nil {
			return nil, err
		}
		cfg.CipherSuites = ids
	}
	keyKey, trustKey := "tlsKeyStore", "tlsTrustStore"
	if c.side == Client {
		keyKey, trustKey = "clientKeyStore", "clientTrustStore"
	}
	if c.side == Bookie || s.ClientAuthentication {
		cert, err := loadKeyPair(keyKey, s)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	var pool *x509.CertPool
	if c.side == Client || s.ClientAuthentication {
		var err error
		if pool, err = loadTrust(trustKey, s); err != nil {
			return nil, err
		}
	}
	if c.side == Bookie {
		if s.ClientAuthentication {
			cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, pool
		}
		return cfg, nil
	}
	cfg.RootCAs = pool
	if !s.HostnameVerification {
		// BookKeeper's default: the chain must lead to the trust store, but
		// the certificate need not name the host dialled.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error { return verifyChain(cs, pool) }
	}
	return cfg, nil
}

// verifyChain checks the bookie's certificate against the trust store,
// without its name.
func verifyChain(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("bookie presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, cert := range cs.PeerCertificates[1:] {
		inter.AddCert(cert)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

// loadKeyPair reads the key store: PEM as two files (key, then
// tlsCertificatePath), PKCS12 or JKS as one.
func loadKeyPair(key string, s Settings) (tls.Certificate, error) {
	t, err := storeType(key+"Type", s.KeyStoreType)
	if err != nil {
		return tls.Certificate{}, err
	}
	pass, err := readPassword(key+"PasswordPath", s.KeyStorePasswordPath)
	if err != nil {
		return tls.Certificate{}, err
	}
	st := clienttls.Store{Key: key, LocationKey: key, Location: s.KeyStore, Password: pass, Type: t}
	if t == "PEM" {
		return clienttls.LoadPEMKeyPair(st, s.CertificatePath, "tlsCertificatePath")
	}
	return clienttls.LoadKeyPair(st)
}

// loadTrust reads the trust store into a pool.
func loadTrust(key string, s Settings) (*x509.CertPool, error) {
	t, err := storeType(key+"Type", s.TrustStoreType)
	if err != nil {
		return nil, err
	}
	pass, err := readPassword(key+"PasswordPath", s.TrustStorePasswordPath)
	if err != nil {
		return nil, err
	}
	certs, err := clienttls.LoadTrusted(clienttls.Store{Key: key, LocationKey: key, Location: s.TrustStore, Password: pass, Type: t})
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, cert := range certs {
		pool.AddCert(cert)
	}
	return pool, nil
}

// readPassword reads a password file, trimmed of surrounding white space
// as BookKeeper trims it; no path is the empty password.
func readPassword(key, path string) (string, error) {
	if path == "" {
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPasswordBytes+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	if len(data) > maxPasswordBytes {
		return "", fmt.Errorf("%s: %s: larger than %d bytes", key, path, maxPasswordBytes)
	}
	return strings.TrimSpace(string(data)), nil
}
