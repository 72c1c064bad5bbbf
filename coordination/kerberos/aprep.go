package kerberos

import (
	"encoding/asn1"
	"fmt"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/types"
)

// ASN.1 application tags and message type of RFC 4120 §5.5.2.
const (
	tagAPRep        = 15
	tagEncAPRepPart = 27
	msgTypeAPRep    = 15
)

// encAPRepPart is EncAPRepPart without the optional subkey: the acceptor
// keeps the initiator's subkey.
type encAPRepPart struct {
	CTime     time.Time `asn1:"generalized,explicit,tag:0"`
	Cusec     int       `asn1:"explicit,tag:1"`
	SeqNumber int64     `asn1:"explicit,tag:3"`
}

type encryptedData struct {
	EType  int32  `asn1:"explicit,tag:0"`
	Cipher []byte `asn1:"explicit,tag:2"`
}

type apRepBody struct {
	PVNO    int           `asn1:"explicit,tag:0"`
	MsgType int           `asn1:"explicit,tag:1"`
	EncPart encryptedData `asn1:"explicit,tag:2"`
}

// apRep builds the AP-REP that proves the acceptor read the authenticator
// (its ctime and cusec), with the acceptor's initial sequence number.
func apRep(sessionKey types.EncryptionKey, ctime time.Time, cusec int, seq uint64) ([]byte, error) {
	part, err := application(tagEncAPRepPart, encAPRepPart{CTime: ctime.UTC().Truncate(time.Second), Cusec: cusec, SeqNumber: int64(seq)})
	if err != nil {
		return nil, err
	}
	ed, err := crypto.GetEncryptedData(part, sessionKey, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, fmt.Errorf("AP-REP: %v", err)
	}
	return application(tagAPRep, apRepBody{PVNO: 5, MsgType: msgTypeAPRep, EncPart: encryptedData{EType: ed.EType, Cipher: ed.Cipher}})
}

// application DER-encodes v wrapped in [APPLICATION tag].
func application(tag int, v any) ([]byte, error) {
	seq, err := asn1.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("AP-REP: %v", err)
	}
	return asn1.Marshal(asn1.RawValue{Class: asn1.ClassApplication, Tag: tag, IsCompound: true, Bytes: seq})
}
