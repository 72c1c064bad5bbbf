// Package kerberostest makes what a Kerberos initiator sends, without a
// KDC, for tests of the GSSAPI acceptor and of what runs on top of it: a
// keytab for a service, initial context tokens for tickets of that
// service, and the initiator's wrap tokens (docs/sasl.md).
package kerberostest

import (
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"

	"keeper/coordination/kerberos"
)

// aes256 is aes256-cts-hmac-sha1-96, MIT's default enctype.
const aes256 = 18

// Keytab returns a keytab file's bytes with the key of principal
// (service/host, no realm) in realm, derived from password.
func Keytab(t testing.TB, principal, realm, password string) []byte {
	t.Helper()
	b, err := keytabFor(t, principal, realm, password).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func keytabFor(t testing.TB, principal, realm, password string) *keytab.Keytab {
	t.Helper()
	kt := keytab.New()
	if err := kt.AddEntry(principal, realm, password, time.Unix(0, 0), 1, aes256); err != nil {
		t.Fatal(err)
	}
	return kt
}

// ServiceTicket is what a KDC would give client@realm for service
// (service/host) whose key derives from servicePassword: the ticket, valid
// from now for an hour, and its session key (aes256-cts-hmac-sha1-96).
func ServiceTicket(t testing.TB, client, service, realm, servicePassword string, now time.Time) (messages.Ticket, types.EncryptionKey) {
	t.Helper()
	tkt, sessionKey, err := messages.NewTicket(types.NewPrincipalName(1, client), realm, types.NewPrincipalName(3, service), realm,
		types.NewKrbFlags(), keytabFor(t, service, realm, servicePassword), aes256, 1, now, now, now.Add(time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return tkt, sessionKey
}

// Login is one client's context: its subkey and sequence number.
type Login struct {
	Token  []byte // the initial context token
	subkey types.EncryptionKey
	seq    uint64
}

// NewLogin makes client@realm's initial context token for a ticket to
// service (service/host) encrypted with the key from servicePassword,
// issued and used at now, asking for mutual authentication or not.
func NewLogin(t testing.TB, client, service, realm, servicePassword string, now time.Time, mutual bool) *Login {
	t.Helper()
	cname := types.NewPrincipalName(1, client)
	tkt, sessionKey := ServiceTicket(t, client, service, realm, servicePassword, now)
	auth, err := types.NewAuthenticator(realm, cname)
	if err != nil {
		t.Fatal(err)
	}
	auth.CTime, auth.Cusec = now.Truncate(time.Second), now.Nanosecond()/1000
	if err := auth.GenerateSeqNumberAndSubKey(aes256, 32); err != nil {
		t.Fatal(err)
	}
	sum := make([]byte, 24)
	binary.LittleEndian.PutUint32(sum, 16)
	if mutual {
		binary.LittleEndian.PutUint32(sum[20:], 0x02) // GSS_C_MUTUAL_FLAG
	}
	auth.Cksum = types.Checksum{CksumType: 0x8003, Checksum: sum}
	req, err := messages.NewAPReq(tkt, sessionKey, auth)
	if err != nil {
		t.Fatal(err)
	}
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	oid := []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02, 0x01, 0x00}
	body := append(oid, b...)
	tok := []byte{0x60, 0x82, byte(len(body) >> 8), byte(len(body))}
	return &Login{Token: append(tok, body...), subkey: auth.SubKey, seq: uint64(auth.SeqNumber)}
}

// Wrap is the initiator's next wrap token of msg, integrity only.
func (l *Login) Wrap(t testing.TB, msg []byte) []byte {
	t.Helper()
	hdr := []byte{0x05, 0x04, 0, 0xff, 0, 0, 0, 0}
	hdr = binary.BigEndian.AppendUint64(hdr, l.seq)
	et, err := crypto.GetEtype(l.subkey.KeyType)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := et.GetChecksumHash(l.subkey.KeyValue, append(append([]byte{}, msg...), hdr...), keyusage.GSSAPI_INITIATOR_SEAL)
	if err != nil {
		t.Fatal(err)
	}
	l.seq++
	binary.BigEndian.PutUint16(hdr[4:6], uint16(len(sum)))
	return append(append(hdr, msg...), sum...)
}

// Initiator opens keeper's initiator context for client@realm with a
// ticket to service (as ServiceTicket makes it), at now, and returns it
// with its initial context token; entropy supplies its subkey and
// sequence number.
func Initiator(t testing.TB, client, service, realm, servicePassword string, now time.Time, entropy io.Reader) (*kerberos.Initiator, []byte) {
	t.Helper()
	tkt, key := ServiceTicket(t, client, service, realm, servicePassword, now)
	in, tok, err := kerberos.NewInitiator(kerberos.InitiatorConfig{Client: types.NewPrincipalName(1, client), Realm: realm,
		Ticket: tkt, SessionKey: key, Now: now, Entropy: entropy})
	if err != nil {
		t.Fatal(err)
	}
	return in, tok
}
