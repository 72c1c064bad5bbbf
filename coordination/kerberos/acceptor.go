package kerberos

import (
	"crypto/hmac"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// DefaultClockSkew is how far a client's clock may be from the server's,
// Kerberos' usual five minutes (MIT's clockskew and Java's default).
const DefaultClockSkew = 5 * time.Minute

// DefaultReplayEntries bounds the replay cache: authenticators seen within
// the clock skew. Each is a few dozen bytes; 65536 of them is more logins
// than a server sees in five minutes, and a full cache refuses logins
// rather than forget one it might see again.
const DefaultReplayEntries = 65536

// Config configures an Acceptor.
type Config struct {
	// Keytab is the keytab file's bytes (MIT's format, as ktutil and
	// kadmin write it).
	Keytab []byte
	// Principal is the service principal the acceptor is, as
	// service/host@REALM (ZooKeeper's JAAS principal option). Only tickets
	// for exactly this principal are accepted.
	Principal string
	// ClockSkew is the largest difference accepted between a client's
	// authenticator time and now; 0 means DefaultClockSkew.
	ClockSkew time.Duration
	// ReplayEntries bounds the replay cache; 0 means DefaultReplayEntries.
	ReplayEntries int
	// Entropy supplies the acceptor's initial sequence numbers
	// (crypto/rand.Reader outside tests).
	Entropy io.Reader
}

// Acceptor accepts contexts for one service principal. It is not safe for
// concurrent use: the replay cache is its state.
type Acceptor struct {
	kt      *keytab.Keytab
	sname   types.PrincipalName
	realm   string
	skew    time.Duration
	entropy io.Reader
	replay  *replayCache
}

// NewAcceptor checks cfg: the keytab must parse and hold a key for the
// principal, which must be service/host@REALM.
func NewAcceptor(cfg Config) (*Acceptor, error) {
	name, realm, ok := strings.Cut(cfg.Principal, "@")
	service, host, hasHost := strings.Cut(name, "/")
	if !ok || !hasHost || service == "" || host == "" || realm == "" || strings.ContainsAny(realm, "/@") || strings.ContainsAny(host, "/") {
		return nil, fmt.Errorf("kerberos: principal %q is not service/host@REALM", cfg.Principal)
	}
	if cfg.Entropy == nil {
		return nil, errors.New("kerberos: no entropy source")
	}
	kt := keytab.New()
	if err := kt.Unmarshal(cfg.Keytab); err != nil {
		return nil, fmt.Errorf("kerberos: keytab: %w", err)
	}
	a := &Acceptor{
		kt:      kt,
		sname:   types.PrincipalName{NameType: 3, NameString: []string{service, host}}, // KRB_NT_SRV_HST
		realm:   realm,
		skew:    cfg.ClockSkew,
		entropy: cfg.Entropy,
		replay:  &replayCache{max: cfg.ReplayEntries, seen: map[replayKey]time.Time{}},
	}
	if a.skew <= 0 {
		a.skew = DefaultClockSkew
	}
	if a.replay.max <= 0 {
		a.replay.max = DefaultReplayEntries
	}
	if !a.hasKey() {
		return nil, fmt.Errorf("kerberos: the keytab holds no key for %s", cfg.Principal)
	}
	return a, nil
}

// hasKey reports whether the keytab has any key for the principal.
func (a *Acceptor) hasKey() bool {
	for _, e := range a.kt.Entries {
		p := e.Principal
		if p.Realm == a.realm && len(p.Components) == 2 && p.Components[0] == a.sname.NameString[0] && p.Components[1] == a.sname.NameString[1] {
			return true
		}
	}
	return false
}

// Context is an established context: who the initiator is and the keys
// and sequence numbers of the wrap tokens that follow.
type Context struct {
	// Peer is the initiator's principal, name@REALM.
	Peer    string
	key     types.EncryptionKey
	sendSeq uint64 // the acceptor's next sequence number
	recvSeq uint64 // the initiator's next sequence number
}

// The RC4 encryption types (RFC 4757).
const (
	etypeRC4HMAC    = 23
	etypeRC4HMACExp = 24
)

// GSS checksum flags (RFC 4121 §4.1.1.1) the acceptor looks at.
const (
	gssMutualFlag  = 0x02
	gssChecksumTyp = 0x8003
)

// Accept checks the initiator's first context token at time now and
// returns the established context, and the token to send back: an AP-REP
// when the initiator asked for mutual authentication, else nil.
func (a *Acceptor) Accept(token []byte, now time.Time) (*Context, []byte, error) {
	tokID, inner, err := decodeContextToken(token)
	if err != nil {
		return nil, nil, err
	}
	if tokID != tokAPReq {
		return nil, nil, fmt.Errorf("context token id %x is not an AP-REQ", tokID)
	}
	var req messages.APReq
	if err := req.Unmarshal(inner); err != nil {
		return nil, nil, fmt.Errorf("AP-REQ: %v", err)
	}
	if types.IsFlagSet(&req.APOptions, flags.APOptionUseSessionKey) {
		return nil, nil, errors.New("user-to-user AP-REQ is not supported")
	}
	tkt := &req.Ticket
	if !tkt.SName.Equal(a.sname) || tkt.Realm != a.realm {
		return nil, nil, fmt.Errorf("ticket is for %s@%s, not %s@%s", tkt.SName.PrincipalNameString(), tkt.Realm, a.sname.PrincipalNameString(), a.realm)
	}
	if err := tkt.DecryptEncPart(a.kt, &a.sname); err != nil {
		return nil, nil, fmt.Errorf("ticket: %v", err)
	}
	enc := &tkt.DecryptedEncPart
	start := enc.AuthTime
	if !enc.StartTime.IsZero() {
		start = enc.StartTime
	}
	if now.Add(a.skew).Before(start) {
		return nil, nil, errors.New("ticket not yet valid")
	}
	if now.Add(-a.skew).After(enc.EndTime) {
		return nil, nil, errors.New("ticket expired")
	}
	if types.IsFlagSet(&enc.Flags, flags.Invalid) {
		return nil, nil, errors.New("ticket is marked invalid")
	}
	if err := req.DecryptAuthenticator(enc.Key); err != nil {
		return nil, nil, fmt.Errorf("authenticator: %v", err)
	}
	auth := &req.Authenticator
	if !auth.CName.Equal(enc.CName) || auth.CRealm != enc.CRealm {
		return nil, nil, errors.New("authenticator's client is not the ticket's")
	}
	ctime := auth.CTime.Add(time.Duration(auth.Cusec) * time.Microsecond)
	if d := now.Sub(ctime); d > a.skew || d < -a.skew {
		return nil, nil, fmt.Errorf("clock skew of %v with the client is over %v", d.Round(time.Second), a.skew)
	}
	gssFlags, err := checksumFlags(auth.Cksum)
	if err != nil {
		return nil, nil, err
	}
	peer := enc.CName.PrincipalNameString() + "@" + enc.CRealm
	if err := a.replay.add(replayKey{client: peer, ctime: ctime.UnixMicro()}, ctime.Add(a.skew), now); err != nil {
		return nil, nil, err
	}
	ctx := &Context{Peer: peer, key: enc.Key, recvSeq: uint64(uint32(auth.SeqNumber))}
	if len(auth.SubKey.KeyValue) > 0 {
		ctx.key = auth.SubKey
	}
	if _, err := crypto.GetEtype(ctx.key.KeyType); err != nil || ctx.key.KeyType == etypeRC4HMAC || ctx.key.KeyType == etypeRC4HMACExp {
		// RC4's wrap tokens are RFC 4757's older format, not
		// implemented; gokrb5 knows no DES.
		return nil, nil, fmt.Errorf("session key type %d is not supported", ctx.key.KeyType)
	}
	if gssFlags&gssMutualFlag == 0 && !types.IsFlagSet(&req.APOptions, flags.APOptionMutualRequired) {
		// Without mutual authentication both directions start from the
		// initiator's sequence number.
		ctx.sendSeq = ctx.recvSeq
		return ctx, nil, nil
	}
	var seq [4]byte
	if _, err := io.ReadFull(a.entropy, seq[:]); err != nil {
		return nil, nil, fmt.Errorf("sequence number: %v", err)
	}
	ctx.sendSeq = uint64(binary.BigEndian.Uint32(seq[:]) & 0x3fffffff)
	rep, err := apRep(enc.Key, auth.CTime, auth.Cusec, ctx.sendSeq)
	if err != nil {
		return nil, nil, err
	}
	return ctx, encodeContextToken(tokAPRep, rep), nil
}

// checksumFlags reads the GSS flags of the authenticator's checksum
// (type 0x8003: Lgth=16 little-endian, 16 bytes of channel bindings,
// flags little-endian, then optional delegation).
func checksumFlags(c types.Checksum) (uint32, error) {
	if c.CksumType != gssChecksumTyp {
		return 0, fmt.Errorf("authenticator checksum type %#x is not GSS-API's", c.CksumType)
	}
	b := c.Checksum
	if len(b) < 24 || binary.LittleEndian.Uint32(b[:4]) != 16 {
		return 0, errors.New("authenticator's GSS-API checksum is malformed")
	}
	return binary.LittleEndian.Uint32(b[20:24]), nil
}

// Wrap returns msg in a wrap token from the acceptor, integrity only.
func (c *Context) Wrap(msg []byte) ([]byte, error) {
	w := &wrapToken{flags: flagSentByAcceptor, seq: c.sendSeq, data: msg}
	sum, err := checksum(c.key, keyusage.GSSAPI_ACCEPTOR_SEAL, checksumInput(w.flags, w.seq, msg))
	if err != nil {
		return nil, err
	}
	w.checksum = sum
	c.sendSeq++
	return w.encode(), nil
}

// Unwrap checks an initiator's wrap token (integrity only, the next
// sequence number, the right checksum) and returns its message.
func (c *Context) Unwrap(token []byte) ([]byte, error) {
	w, err := decodeWrapToken(token)
	if err != nil {
		return nil, err
	}
	if w.flags&flagSentByAcceptor != 0 {
		return nil, errors.New("wrap token claims to come from the acceptor")
	}
	if w.flags&flagAcceptorSubkey != 0 {
		return nil, errors.New("wrap token names an acceptor subkey, and there is none")
	}
	if w.seq != c.recvSeq {
		return nil, fmt.Errorf("wrap token sequence number %d, want %d", w.seq, c.recvSeq)
	}
	want, err := checksum(c.key, keyusage.GSSAPI_INITIATOR_SEAL, checksumInput(w.flags, w.seq, w.data))
	if err != nil {
		return nil, err
	}
	if !hmac.Equal(want, w.checksum) {
		return nil, errors.New("wrap token checksum does not match")
	}
	c.recvSeq++
	return w.data, nil
}

// checksum is the enctype's keyed checksum of in with usage.
func checksum(key types.EncryptionKey, usage uint32, in []byte) ([]byte, error) {
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, err
	}
	return et.GetChecksumHash(key.KeyValue, in, usage)
}
