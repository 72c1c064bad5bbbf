// Package krblogin logs in to Kerberos as Java's Krb5LoginModule does —
// with a keytab, or from the credential cache kinit filled — and starts
// the initiating side of SASL GSSAPI exchanges with a service principal:
// what a quorum learner and keeper's own ZooKeeper clients need
// (docs/sasl.md). It talks to the KDC of the krb5.conf Java would read.
package krblogin

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/types"

	"keeper/coordination/kerberos"
	"keeper/coordination/sasl"
)

// MaxKeytabBytes bounds a keytab file read into memory: a keytab holds a
// few keys of a few dozen bytes each.
const MaxKeytabBytes = 1 << 20

// maxCCacheBytes bounds a credential cache read into memory: a cache holds
// a TGT and the service tickets got since, a few KiB.
const maxCCacheBytes = 4 << 20

// ReadKeytab reads a keytab file, at most MaxKeytabBytes of it.
func ReadKeytab(file string) ([]byte, error) {
	return readBounded("keytab", file, MaxKeytabBytes)
}

func readBounded(what, file string, limit int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, file, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s %s is larger than %d bytes", what, file, limit)
	}
	return data, nil
}

// Krb5Config loads the krb5.conf Java would read: the file
// -Djava.security.krb5.conf names (props holds the -D flags), else
// /etc/krb5.conf.
func Krb5Config(props map[string]string) (*config.Config, error) {
	file := props["java.security.krb5.conf"]
	if file == "" {
		file = "/etc/krb5.conf"
	}
	cfg, err := config.Load(file)
	if err != nil {
		return nil, fmt.Errorf("krb5.conf %s: %w", file, err)
	}
	return cfg, nil
}

// Login is a logged-in Kerberos principal.
type Login struct {
	cl        *client.Client
	realm     string
	principal string // name@REALM
}

// WithKeytab logs in as principal (name or name@REALM; without a realm,
// krb5.conf's default_realm) with the keys of the keytab file, now: a
// stale keytab or an unreachable KDC is an error here, as Java's module
// fails its login.
func WithKeytab(file, principal string, cfg *config.Config) (*Login, error) {
	data, err := ReadKeytab(file)
	if err != nil {
		return nil, err
	}
	kt := keytab.New()
	if err := kt.Unmarshal(data); err != nil {
		return nil, fmt.Errorf("keytab %s: %w", file, err)
	}
	name, realm, hasRealm := strings.Cut(principal, "@")
	if !hasRealm {
		realm = cfg.LibDefaults.DefaultRealm
		if realm == "" {
			return nil, fmt.Errorf("principal %s names no realm, and krb5.conf has no default_realm", principal)
		}
	}
	l := &Login{cl: client.NewWithKeytab(name, realm, kt, cfg, client.DisablePAFXFAST(true)), realm: realm,
		principal: name + "@" + realm}
	if err := l.cl.Login(); err != nil {
		return nil, fmt.Errorf("could not log in to Kerberos as %s with keytab %s: %w", l.principal, file, err)
	}
	return l, nil
}

// DefaultCCache is the credential cache Java's module reads when its
// ticketCache option is not set: the file KRB5CCNAME names (a FILE:
// prefix is dropped; other cache types are refused), else
// /tmp/krb5cc_<uid>.
func DefaultCCache(getenv func(string) string) (string, error) {
	name := getenv("KRB5CCNAME")
	if name == "" {
		return fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid()), nil
	}
	if kind, file, ok := strings.Cut(name, ":"); ok && !strings.Contains(kind, "/") {
		if kind != "FILE" {
			return "", fmt.Errorf("KRB5CCNAME=%s: only FILE credential caches can be read", name)
		}
		return file, nil
	}
	return name, nil
}

// FromCCache takes the TGT of the credential cache file. When principal
// is set (name or name@REALM) the cache must belong to it, as Java's
// module checks. A cache without a TGT, or whose TGT has expired, is an
// error now rather than at the first connection.
func FromCCache(file, principal string, cfg *config.Config, now time.Time) (*Login, error) {
	data, err := readBounded("credential cache", file, maxCCacheBytes)
	if err != nil {
		return nil, err
	}
	cc := new(credentials.CCache)
	if err := cc.Unmarshal(data); err != nil {
		return nil, fmt.Errorf("credential cache %s: %w", file, err)
	}
	realm := cc.GetClientRealm()
	have := cc.GetClientPrincipalName().PrincipalNameString() + "@" + realm
	if principal != "" {
		want := principal
		if !strings.Contains(want, "@") {
			want += "@" + realm
		}
		if want != have {
			return nil, fmt.Errorf("credential cache %s holds the tickets of %s, not of %s", file, have, principal)
		}
	}
	tgt, ok := cc.GetEntry(krbtgt(realm))
	if !ok {
		return nil, fmt.Errorf("credential cache %s has no ticket-granting ticket for %s (run kinit)", file, have)
	}
	if !tgt.EndTime.After(now) {
		return nil, fmt.Errorf("credential cache %s: the ticket-granting ticket of %s expired at %s (run kinit)", file, have,
			tgt.EndTime.UTC().Format(time.RFC3339))
	}
	cl, err := client.NewFromCCache(cc, cfg, client.DisablePAFXFAST(true))
	if err != nil {
		return nil, fmt.Errorf("credential cache %s: %w", file, err)
	}
	return &Login{cl: cl, realm: realm, principal: have}, nil
}

// Principal is the logged-in principal, name@REALM.
func (l *Login) Principal() string { return l.principal }

// Realm is the logged-in principal's realm.
func (l *Login) Realm() string { return l.realm }

// Destroy forgets the login's tickets.
func (l *Login) Destroy() { l.cl.Destroy() }

// GSSAPI starts one SASL GSSAPI exchange with the service principal spn,
// service/host or service/host@REALM. Without a realm the ticket is asked
// for in serverRealm, or the login's own realm when that is empty (Java's
// zookeeper.server.realm and its default). The exchange's authorization
// id is the login's principal, as Java's SASL client sends it.
func (l *Login) GSSAPI(spn, serverRealm string) (*sasl.GSSAPIClient, error) {
	svc, svcRealm, has := strings.Cut(spn, "@")
	if !has {
		svcRealm = serverRealm
		if svcRealm == "" {
			svcRealm = l.realm
		}
	}
	parts := strings.Split(svc, "/")
	if svc == "" || strings.Contains(svcRealm, "@") {
		return nil, fmt.Errorf("service principal %q is not service[/host][@REALM]", spn)
	}
	// gokrb5 asks for the ticket in the realm krb5.conf's domain_realm
	// maps the host to, else in the login's own; a ticket of another realm
	// than the one Java would ask in is not the ticket wanted.
	r := l.cl.Config.ResolveRealm(parts[len(parts)-1])
	if r == "" {
		r = l.realm
	}
	if r != svcRealm {
		return nil, fmt.Errorf("service principal %s@%s: krb5.conf maps its host to realm %q; keeper asks only for tickets of that realm", svc, svcRealm, r)
	}
	tkt, key, err := l.cl.GetServiceTicket(svc)
	if err != nil {
		return nil, fmt.Errorf("ticket for %s@%s: %w", svc, svcRealm, err)
	}
	in, first, err := kerberos.NewInitiator(kerberos.InitiatorConfig{Client: l.cl.Credentials.CName(), Realm: l.realm,
		Ticket: tkt, SessionKey: key, Now: time.Now(), Entropy: rand.Reader})
	if err != nil {
		return nil, err
	}
	return sasl.NewGSSAPIClient(in, first, l.principal), nil
}

// krbtgt is the ticket-granting service of realm.
func krbtgt(realm string) types.PrincipalName {
	return types.PrincipalName{NameType: nametype.KRB_NT_SRV_INST, NameString: []string{"krbtgt", realm}}
}
