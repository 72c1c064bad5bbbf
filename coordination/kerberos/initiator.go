package kerberos

import (
	"crypto/hmac"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// InitiatorConfig is what an initiator needs for one context: a service
// ticket the caller got from the KDC, with its session key, and who the
// client is.
type InitiatorConfig struct {
	// Client and Realm name the client principal the ticket was issued to.
	Client types.PrincipalName
	Realm  string
	// Ticket and SessionKey are the service ticket and its session key
	// (the TGS-REP's).
	Ticket     messages.Ticket
	SessionKey types.EncryptionKey
	// Now is the authenticator's time.
	Now time.Time
	// Entropy supplies the subkey and the initial sequence number
	// (crypto/rand.Reader outside tests).
	Entropy io.Reader
}

// gssInitiatorFlags are the GSS flags the initiator asks for, as Java's
// SASL GSSAPI client asks for them: mutual authentication, replay and
// sequence detection, confidentiality and integrity (RFC 4121 §4.1.1.1).
// Only mutual authentication changes the exchange: the acceptor answers
// with an AP-REP.
const gssInitiatorFlags = gssMutualFlag | 0x04 | 0x08 | 0x10 | 0x20

// Initiator is the initiating side of one Kerberos GSS-API context
// (RFC 4121), as a ZooKeeper learner opens it to the server it connects
// to: an AP-REQ asking for mutual authentication, the acceptor's AP-REP,
// then wrap tokens without confidentiality. It is not safe for concurrent
// use.
type Initiator struct {
	sessionKey  types.EncryptionKey
	key         types.EncryptionKey // the key of the wrap tokens
	acceptorKey bool                // key is the acceptor's subkey
	ctime       time.Time
	cusec       int
	sendSeq     uint64
	recvSeq     uint64
	established bool
}

// NewInitiator builds the initial context token for cfg's ticket and
// returns it with the initiator waiting for the acceptor's AP-REP.
func NewInitiator(cfg InitiatorConfig) (*Initiator, []byte, error) {
	if cfg.Entropy == nil {
		return nil, nil, errors.New("kerberos: no entropy source")
	}
	kt := cfg.SessionKey.KeyType
	et, err := crypto.GetEtype(kt)
	if err != nil || kt == etypeRC4HMAC || kt == etypeRC4HMACExp {
		return nil, nil, fmt.Errorf("kerberos: session key type %d is not supported", kt)
	}
	sub := make([]byte, et.GetKeyByteSize())
	var seq [4]byte
	if _, err := io.ReadFull(cfg.Entropy, sub); err != nil {
		return nil, nil, fmt.Errorf("kerberos: subkey: %w", err)
	}
	if _, err := io.ReadFull(cfg.Entropy, seq[:]); err != nil {
		return nil, nil, fmt.Errorf("kerberos: sequence number: %w", err)
	}
	in := &Initiator{
		sessionKey: cfg.SessionKey,
		// The AES enctypes' random-to-key is the identity: random bytes
		// of the key's size are a key.
		key:     types.EncryptionKey{KeyType: kt, KeyValue: sub},
		ctime:   cfg.Now.UTC().Truncate(time.Second),
		cusec:   cfg.Now.Nanosecond() / 1000,
		sendSeq: uint64(binary.BigEndian.Uint32(seq[:]) & 0x3fffffff),
	}
	sum := make([]byte, 24)
	binary.LittleEndian.PutUint32(sum, 16) // no channel bindings: 16 zero bytes follow
	binary.LittleEndian.PutUint32(sum[20:], gssInitiatorFlags)
	auth := types.Authenticator{
		AVNO: 5, CRealm: cfg.Realm, CName: cfg.Client,
		Cksum: types.Checksum{CksumType: gssChecksumTyp, Checksum: sum},
		CTime: in.ctime, Cusec: in.cusec,
		SubKey: in.key, SeqNumber: int64(in.sendSeq),
	}
	req, err := messages.NewAPReq(cfg.Ticket, cfg.SessionKey, auth)
	if err != nil {
		return nil, nil, fmt.Errorf("kerberos: AP-REQ: %w", err)
	}
	types.SetFlag(&req.APOptions, flags.APOptionMutualRequired)
	b, err := req.Marshal()
	if err != nil {
		return nil, nil, fmt.Errorf("kerberos: AP-REQ: %w", err)
	}
	return in, encodeContextToken(tokAPReq, b), nil
}

// Established reports whether the acceptor's AP-REP was accepted.
func (in *Initiator) Established() bool { return in.established }

// Reply checks the acceptor's reply to the initial token: an AP-REP under
// the session key that echoes the authenticator's time. It sets the
// acceptor's sequence number and, when the AP-REP carries one, its subkey.
func (in *Initiator) Reply(token []byte) error {
	if in.established {
		return errors.New("context already established")
	}
	tokID, inner, err := decodeContextToken(token)
	if err != nil {
		return err
	}
	if tokID != tokAPRep {
		// A KRB-ERROR (token id 03 00) lands here too.
		return fmt.Errorf("context token id %x is not an AP-REP", tokID)
	}
	var rep messages.APRep
	if err := rep.Unmarshal(inner); err != nil {
		return fmt.Errorf("AP-REP: %v", err)
	}
	if rep.EncPart.EType != in.sessionKey.KeyType {
		return fmt.Errorf("AP-REP encrypted with type %d, not the session key's %d", rep.EncPart.EType, in.sessionKey.KeyType)
	}
	et, _ := crypto.GetEtype(in.sessionKey.KeyType) // known: NewInitiator checked it
	if len(rep.EncPart.Cipher) < et.GetConfounderByteSize()+et.GetHMACBitLength()/8 {
		// gokrb5 slices past the start of a shorter one.
		return fmt.Errorf("AP-REP: encrypted part of %d bytes is too short", len(rep.EncPart.Cipher))
	}
	plain, err := crypto.DecryptEncPart(rep.EncPart, in.sessionKey, keyusage.AP_REP_ENCPART)
	if err != nil {
		return fmt.Errorf("AP-REP: %v", err)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		return fmt.Errorf("AP-REP: %v", err)
	}
	if !part.CTime.Equal(in.ctime) || part.Cusec != in.cusec {
		return errors.New("AP-REP does not echo the authenticator's time")
	}
	if len(part.Subkey.KeyValue) > 0 {
		if _, err := crypto.GetEtype(part.Subkey.KeyType); err != nil || part.Subkey.KeyType == etypeRC4HMAC || part.Subkey.KeyType == etypeRC4HMACExp {
			return fmt.Errorf("acceptor subkey type %d is not supported", part.Subkey.KeyType)
		}
		in.key, in.acceptorKey = part.Subkey, true
	}
	in.recvSeq = uint64(uint32(part.SequenceNumber))
	in.established = true
	return nil
}

// Wrap returns msg in a wrap token from the initiator, integrity only.
func (in *Initiator) Wrap(msg []byte) ([]byte, error) {
	if !in.established {
		return nil, errors.New("context not established")
	}
	var fl byte
	if in.acceptorKey {
		fl = flagAcceptorSubkey
	}
	sum, err := checksum(in.key, keyusage.GSSAPI_INITIATOR_SEAL, checksumInput(fl, in.sendSeq, msg))
	if err != nil {
		return nil, err
	}
	w := &wrapToken{flags: fl, seq: in.sendSeq, data: msg, checksum: sum}
	in.sendSeq++
	return w.encode(), nil
}

// Unwrap checks an acceptor's wrap token (integrity only, the next
// sequence number, the right key and checksum) and returns its message.
func (in *Initiator) Unwrap(token []byte) ([]byte, error) {
	if !in.established {
		return nil, errors.New("context not established")
	}
	w, err := decodeWrapToken(token)
	if err != nil {
		return nil, err
	}
	if w.flags&flagSentByAcceptor == 0 {
		return nil, errors.New("wrap token does not come from the acceptor")
	}
	if (w.flags&flagAcceptorSubkey != 0) != in.acceptorKey {
		return nil, errors.New("wrap token's acceptor-subkey flag does not match the context")
	}
	if w.seq != in.recvSeq {
		return nil, fmt.Errorf("wrap token sequence number %d, want %d", w.seq, in.recvSeq)
	}
	want, err := checksum(in.key, keyusage.GSSAPI_ACCEPTOR_SEAL, checksumInput(w.flags, w.seq, w.data))
	if err != nil {
		return nil, err
	}
	if !hmac.Equal(want, w.checksum) {
		return nil, errors.New("wrap token checksum does not match")
	}
	in.recvSeq++
	return w.data, nil
}
