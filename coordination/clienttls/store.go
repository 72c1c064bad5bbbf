package clienttls

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// StoreType is a key or trust store's file format.
type StoreType string

// The store types ZooKeeper 3.8 reads that keeper reads too. BCFKS, its
// fourth, is refused.
const (
	PEM    StoreType = "PEM"
	PKCS12 StoreType = "PKCS12"
	JKS    StoreType = "JKS"
)

// Store names a key or trust store file, as zoo.cfg's ssl.keyStore.* or
// ssl.trustStore.* keys do.
type Store struct {
	// Key is the zoo.cfg key prefix, "ssl.keyStore" or "ssl.trustStore",
	// for error messages.
	Key string
	// Location is the file; "" means no store.
	Location string
	// Password decrypts the store (and, in a key store, the private key);
	// PasswordPath, when set, names a file whose content is the password
	// instead, less one trailing newline, as ZooKeeper reads it.
	Password, PasswordPath string
	// Type is PEM, PKCS12 or JKS in any case; "" guesses it from
	// Location's extension.
	Type string
	// LocationKey names the setting that gives Location, for errors; ""
	// is Key+".location", zoo.cfg's spelling (BookKeeper's is tlsKeyStore).
	LocationKey string
}

// locationKey is the setting that gives Location, for errors.
func (s Store) locationKey() string {
	if s.LocationKey != "" {
		return s.LocationKey
	}
	return s.Key + ".location"
}

// storeMagicJKS begins a JKS file; storeMagicJCEKS a JCEKS file, which
// keeper cannot read.
const (
	storeMagicJKS   = "\xfe\xed\xfe\xed"
	storeMagicJCEKS = "\xce\xce\xce\xce"
)

// maxStoreBytes bounds a store file read into memory: real stores are a
// few kilobytes, a trust store with a whole CA bundle a few hundred.
const maxStoreBytes = 16 << 20

// storeType returns s's type: Type if set, else the one Location's
// extension names (.pem, .p12, .jks, case-sensitive, as ZooKeeper's
// KeyStoreFileType guesses it).
func (s Store) storeType() (StoreType, error) {
	if s.Type != "" {
		switch t := StoreType(strings.ToUpper(s.Type)); t {
		case PEM, PKCS12, JKS:
			return t, nil
		case "BCFKS":
			return "", fmt.Errorf("%s.type: keeper does not read BCFKS stores; use PEM, PKCS12 or JKS", s.Key)
		}
		return "", fmt.Errorf("%s.type: unknown store type %q: want PEM, PKCS12 or JKS", s.Key, s.Type)
	}
	i := strings.LastIndexByte(s.Location, '.')
	if i >= 0 {
		switch s.Location[i:] {
		case ".pem":
			return PEM, nil
		case ".p12":
			return PKCS12, nil
		case ".jks":
			return JKS, nil
		case ".bcfks":
			return "", fmt.Errorf("%s: %s: keeper does not read BCFKS stores; use PEM, PKCS12 or JKS", s.locationKey(), s.Location)
		}
	}
	return "", fmt.Errorf("%s: %s: cannot tell the store type from the file name; set %s.type", s.locationKey(), s.Location, s.Key)
}

// password returns the store's password, read from PasswordPath when set.
func (s Store) password() (string, error) {
	if s.PasswordPath == "" {
		return s.Password, nil
	}
	data, err := readBounded(s.PasswordPath)
	if err != nil {
		return "", fmt.Errorf("%s.passwordPath: %w", s.Key, err)
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

// readBounded reads a file of at most maxStoreBytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStoreBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxStoreBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxStoreBytes)
	}
	return data, nil
}

// errWrongPassword is what a store that does not open with its password
// reports; the message names the key, never the password.
var errWrongPassword = errors.New("wrong password, or the file is damaged")

// read reads s's file and password and returns them with the type.
func (s Store) read() ([]byte, string, StoreType, error) {
	t, err := s.storeType()
	if err != nil {
		return nil, "", "", err
	}
	pass, err := s.password()
	if err != nil {
		return nil, "", "", err
	}
	data, err := readBounded(s.Location)
	if err != nil {
		return nil, "", "", fmt.Errorf("%s: %w", s.locationKey(), err)
	}
	return data, pass, t, nil
}

// LoadKeyPair reads a key store: its private key and the certificate chain
// that goes with it. A store without a private key, or with several, is an
// error.
func LoadKeyPair(s Store) (tls.Certificate, error) {
	data, pass, t, err := s.read()
	if err != nil {
		return tls.Certificate{}, err
	}
	var key crypto.PrivateKey
	var chain []*x509.Certificate
	switch {
	case t == PEM:
		key, chain, err = pemKeyPair(data, pass)
	case binaryType(data) == JKS:
		key, chain, err = jksKeyPair(data, pass)
	default:
		key, chain, err = pkcs12KeyPair(data, pass, t)
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %s: %w", s.locationKey(), s.Location, err)
	}
	cert, err := keyPair(key, chain)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %s: %w", s.locationKey(), s.Location, err)
	}
	return cert, nil
}

// LoadPEMKeyPair reads a private key from the PEM file s names and its
// certificate chain from the PEM file certPath, as BookKeeper names them
// apart (tlsKeyStore and tlsCertificatePath); certKey names certPath's
// setting in errors. The key file may hold the chain too.
func LoadPEMKeyPair(s Store, certPath, certKey string) (tls.Certificate, error) {
	keyData, pass, _, err := s.read()
	if err != nil {
		return tls.Certificate{}, err
	}
	certData, err := readBounded(certPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", certKey, err)
	}
	data := append(append(append([]byte(nil), keyData...), '\n'), certData...)
	key, chain, err := pemKeyPair(data, pass)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %s: %w", s.locationKey(), s.Location, err)
	}
	cert, err := keyPair(key, chain)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %s and %s: %s: %w", s.locationKey(), s.Location, certKey, certPath, err)
	}
	return cert, nil
}

// LoadTrusted reads a trust store: the certificates it trusts. Like
// Java's trust manager, it trusts a store's trusted-certificate entries
// and the first certificate of each private key entry.
func LoadTrusted(s Store) ([]*x509.Certificate, error) {
	data, pass, t, err := s.read()
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	switch {
	case t == PEM:
		certs, err = pemCertificates(data)
	case binaryType(data) == JKS:
		certs, err = jksTrusted(data, pass)
	default:
		certs, err = pkcs12Trusted(data, pass, t)
	}
	if err == nil && len(certs) == 0 {
		err = errors.New("no certificates in the trust store")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", s.locationKey(), s.Location, err)
	}
	return certs, nil
}

// binaryType tells a JKS file from the rest by its magic number. Java 9
// and later read a JKS file through the PKCS12 type and a PKCS12 file
// through the JKS type, so the declared type decides only PEM or not.
func binaryType(data []byte) StoreType {
	if bytes.HasPrefix(data, []byte(storeMagicJKS)) {
		return JKS
	}
	return PKCS12
}

// keyPair pairs key with its certificate (the one in chain whose public
// key is key's, moved first) and the rest of chain.
func keyPair(key crypto.PrivateKey, chain []*x509.Certificate) (tls.Certificate, error) {
	signer, ok := key.(crypto.Signer)
	if !ok {
		return tls.Certificate{}, fmt.Errorf("unsupported private key type %T", key)
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	leaf := -1
	for i, c := range chain {
		if pub, ok := signer.Public().(equaler); ok && pub.Equal(c.PublicKey) {
			leaf = i
			break
		}
	}
	if leaf < 0 {
		return tls.Certificate{}, errors.New("no certificate matches the private key")
	}
	ordered := append([]*x509.Certificate{chain[leaf]}, chain[:leaf]...)
	ordered = append(ordered, chain[leaf+1:]...)
	cert := tls.Certificate{PrivateKey: key, Leaf: ordered[0]}
	for _, c := range ordered {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}

// pemKeyPair reads a PEM key store: one private key and its certificate
// chain in the same file. With a password, ZooKeeper expects the key to be
// encrypted (PKCS#8); keeper does not decrypt PEM keys and says so.
func pemKeyPair(data []byte, pass string) (crypto.PrivateKey, []*x509.Certificate, error) {
	var key crypto.PrivateKey
	var chain []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		switch {
		case b.Type == "ENCRYPTED PRIVATE KEY" || b.Headers["Proc-Type"] != "":
			return nil, nil, errors.New("keeper does not decrypt PEM private keys; store the key unencrypted (and leave the password empty) or use a PKCS12 store")
		case strings.HasSuffix(b.Type, "PRIVATE KEY"):
			if key != nil {
				return nil, nil, errors.New("more than one private key")
			}
			k, err := parsePrivateKey(b.Bytes)
			if err != nil {
				return nil, nil, err
			}
			key = k
		case b.Type == "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, nil, err
			}
			chain = append(chain, c)
		}
	}
	if key == nil {
		return nil, nil, errors.New("no private key")
	}
	if pass != "" {
		return nil, nil, errors.New("the password is set but the PEM private key is not encrypted; ZooKeeper refuses that too: leave the password empty")
	}
	return key, chain, nil
}

// parsePrivateKey reads a PKCS#8 key, and also PKCS#1 RSA and SEC 1 EC
// keys, which ZooKeeper's PEM reader refuses.
func parsePrivateKey(der []byte) (crypto.PrivateKey, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New("cannot parse the private key")
}

// pemCertificates reads every CERTIFICATE block.
func pemCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return certs, nil
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
}

// jksKeyPair reads the one private key entry of a JKS store; the key is
// encrypted with the store's password, as ZooKeeper's key manager expects.
func jksKeyPair(data []byte, pass string) (crypto.PrivateKey, []*x509.Certificate, error) {
	ks, err := loadJKS(data, pass)
	if err != nil {
		return nil, nil, err
	}
	var found []string
	for _, alias := range ks.Aliases() {
		if ks.IsPrivateKeyEntry(alias) {
			found = append(found, alias)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil, errors.New("no private key entry")
	case 1:
	default:
		return nil, nil, fmt.Errorf("%d private key entries; keeper serves one", len(found))
	}
	entry, err := ks.GetPrivateKeyEntry(found[0], []byte(pass))
	if err != nil {
		return nil, nil, fmt.Errorf("private key %q: %w", found[0], errWrongPassword)
	}
	key, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey)
	if err != nil {
		return nil, nil, fmt.Errorf("private key %q: %w", found[0], err)
	}
	chain, err := parseJKSChain(entry.CertificateChain)
	if err != nil {
		return nil, nil, err
	}
	return key, chain, nil
}

// jksTrusted returns a JKS store's trusted certificates and the first
// certificate of each private key entry.
func jksTrusted(data []byte, pass string) ([]*x509.Certificate, error) {
	ks, err := loadJKS(data, pass)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for _, alias := range ks.Aliases() {
		var raw []keystore.Certificate
		if ks.IsTrustedCertificateEntry(alias) {
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return nil, err
			}
			raw = []keystore.Certificate{e.Certificate}
		} else if chain, err := ks.GetPrivateKeyEntryCertificateChain(alias); err == nil && len(chain) > 0 {
			raw = chain[:1]
		}
		parsed, err := parseJKSChain(raw)
		if err != nil {
			return nil, err
		}
		certs = append(certs, parsed...)
	}
	return certs, nil
}

func loadJKS(data []byte, pass string) (keystore.KeyStore, error) {
	ks := keystore.New(keystore.WithOrderedAliases())
	if err := ks.Load(bytes.NewReader(data), []byte(pass)); err != nil {
		if strings.Contains(err.Error(), "digest") {
			return ks, errWrongPassword
		}
		return ks, fmt.Errorf("not a JKS store: %w", err)
	}
	return ks, nil
}

func parseJKSChain(raw []keystore.Certificate) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for _, c := range raw {
		if c.Type != "X.509" && c.Type != "X509" {
			return nil, fmt.Errorf("certificate of type %q", c.Type)
		}
		parsed, err := x509.ParseCertificate(c.Content)
		if err != nil {
			return nil, err
		}
		out = append(out, parsed)
	}
	return out, nil
}

// pkcs12KeyPair reads the private key and certificates of a PKCS12 store.
func pkcs12KeyPair(data []byte, pass string, declared StoreType) (crypto.PrivateKey, []*x509.Certificate, error) {
	if bytes.HasPrefix(data, []byte(storeMagicJCEKS)) {
		return nil, nil, errors.New("keeper does not read JCEKS stores; use PEM, PKCS12 or JKS")
	}
	key, leaf, cas, err := pkcs12.DecodeChain(data, pass)
	if err != nil {
		return nil, nil, pkcs12Error(err, declared)
	}
	return key, append([]*x509.Certificate{leaf}, cas...), nil
}

// pkcs12Trusted reads a PKCS12 trust store: the certificates Java marks as
// trusted, or, in a store with a private key, the key's certificate.
func pkcs12Trusted(data []byte, pass string, declared StoreType) ([]*x509.Certificate, error) {
	if bytes.HasPrefix(data, []byte(storeMagicJCEKS)) {
		return nil, errors.New("keeper does not read JCEKS stores; use PEM, PKCS12 or JKS")
	}
	certs, err := pkcs12.DecodeTrustStore(data, pass)
	if err == nil {
		return certs, nil
	}
	if errors.Is(err, pkcs12.ErrIncorrectPassword) {
		return nil, errWrongPassword
	}
	key, chain, err2 := pkcs12KeyPair(data, pass, declared)
	if err2 != nil {
		return nil, pkcs12Error(err, declared)
	}
	pair, err2 := keyPair(key, chain)
	if err2 != nil {
		return nil, err2
	}
	return []*x509.Certificate{pair.Leaf}, nil
}

func pkcs12Error(err error, declared StoreType) error {
	if errors.Is(err, pkcs12.ErrIncorrectPassword) {
		return errWrongPassword
	}
	if declared == JKS {
		return fmt.Errorf("neither a JKS nor a PKCS12 store: %w", err)
	}
	return fmt.Errorf("not a PKCS12 store: %w", err)
}
