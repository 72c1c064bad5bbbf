// Package kerberos is the accepting side of a Kerberos 5 GSS-API security
// context (RFC 4121 over RFC 4120), as the SASL GSSAPI mechanism needs it
// (coordination/sasl, docs/sasl.md): it takes the initiator's first
// context token, checks the AP-REQ in it against a keytab, and afterwards
// wraps and unwraps the integrity-only tokens of the SASL security-layer
// step.
//
// The package is pure: time comes in as an argument, randomness through
// the Entropy reader, and the keytab as bytes. Cryptography and the
// Kerberos ASN.1 types are gokrb5's.
//
// # Tokens
//
// The initiator's first token (RFC 2743 §3.1 framing, RFC 4121 §4.1):
//
//	0x60 <DER length>
//	  0x06 0x09 2a 86 48 86 f7 12 01 02 02   the Kerberos 5 mechanism OID
//	  01 00                                   TOK_ID: KRB_AP_REQ
//	  <AP-REQ, DER>
//
// The acceptor's answer, only when the initiator asked for mutual
// authentication, has the same framing with TOK_ID 02 00 and an AP-REP
// (enc-part: the authenticator's ctime and cusec and the acceptor's
// initial sequence number, under the ticket's session key).
//
// A wrap token (RFC 4121 §4.2.6.2), here always without confidentiality:
//
//	05 04 FLAGS FF EC(2) RRC(2) SND_SEQ(8) | rotated right by RRC: DATA CHECKSUM
//
// FLAGS bit 0 is SentByAcceptor, bit 1 Sealed, bit 2 AcceptorSubkey; EC
// is the checksum's length. The checksum is the enctype's keyed checksum
// of DATA followed by the 16-byte header with EC and RRC zero, with key
// usage 22 (acceptor) or 24 (initiator), under the initiator's subkey
// from the authenticator, or the session key when it sent none.
package kerberos
