package acl

import (
	"encoding/asn1"
	"encoding/hex"
	"strings"

	"keeper/coordination/zkproto"
)

// SchemeX509 is the scheme of ZooKeeper's X509AuthenticationProvider: the
// identity x509:<subject DN> of a client whose TLS certificate the server
// verified (docs/tls.md).
const SchemeX509 = "x509"

// X509IDs returns the identities a connection with a verified client
// certificate whose subject is dn gets, as ZooKeeper's
// X509AuthenticationProvider gives them: super:<dn> first when dn is
// X509SuperUser, then x509:<dn>. With the x509 provider off, or without a
// certificate (dn empty), it fails with AuthFailed, which is also what an
// "addauth x509" from such a connection gets.
func (a Authenticator) X509IDs(dn string) ([]zkproto.ID, error) {
	if !a.X509 || dn == "" {
		return nil, &zkproto.Error{Code: zkproto.CodeAuthFailed}
	}
	var ids []zkproto.ID
	if a.X509SuperUser != "" && dn == a.X509SuperUser {
		ids = append(ids, zkproto.ID{Scheme: SchemeSuper, ID: dn})
	}
	return append(ids, zkproto.ID{Scheme: SchemeX509, ID: dn}), nil
}

// Fixup is the package's Fixup with the providers a configures: an x509
// entry is invalid while the x509 provider is off, as ZooKeeper finds no
// provider for its scheme; so is a sasl entry while the sasl provider is
// not loaded.
func (a Authenticator) Fixup(acls []zkproto.ACL, authIDs []zkproto.ID) ([]zkproto.ACL, error) {
	if !a.X509 {
		for _, e := range acls {
			if e.ID.Scheme == SchemeX509 {
				return nil, invalidACL()
			}
		}
	}
	return fixup(acls, authIDs, a.SASLProvider)
}

// dnKeywords are the attribute type keywords Java's X500Principal accepts
// in a distinguished name, upper case.
var dnKeywords = map[string]bool{
	"CN": true, "C": true, "L": true, "S": true, "ST": true, "O": true, "OU": true,
	"T": true, "IP": true, "STREET": true, "DC": true, "DNQUALIFIER": true,
	"DNQ": true, "SURNAME": true, "GIVENNAME": true, "INITIALS": true,
	"GENERATION": true, "EMAIL": true, "EMAILADDRESS": true, "UID": true,
	"SERIALNUMBER": true,
}

// ValidDN reports whether s parses as a distinguished name the way the
// x509 provider's isValid checks an ACL id (Java's X500Principal): empty,
// or relative names separated by ',' or ';', each one or more
// type=value pairs joined by '+'; a type is a keyword Java knows (any
// case) or a dotted OID, optionally after "OID."; a value is a quoted
// string, '#' and the hex of one DER value, or a string in which special
// characters are backslash-escaped.
func ValidDN(s string) bool {
	p := dnParser{s: s}
	p.space()
	if p.done() {
		return true
	}
	for {
		if !p.ava() {
			return false
		}
		p.space()
		if p.done() {
			return true
		}
		switch p.s[p.i] {
		case ',', ';', '+':
			p.i++
		default:
			return false
		}
	}
}

type dnParser struct {
	s string
	i int
}

func (p *dnParser) done() bool { return p.i >= len(p.s) }

func (p *dnParser) space() {
	for !p.done() && p.s[p.i] == ' ' {
		p.i++
	}
}

// ava reads type=value.
func (p *dnParser) ava() bool {
	p.space()
	start := p.i
	for !p.done() && p.s[p.i] != '=' {
		p.i++
	}
	if p.done() {
		return false
	}
	if !validDNType(strings.TrimSpace(p.s[start:p.i])) {
		return false
	}
	p.i++ // '='
	p.space()
	if p.done() {
		return true
	}
	switch p.s[p.i] {
	case '"':
		return p.quoted()
	case '#':
		return p.hexValue()
	}
	return p.plain()
}

func validDNType(t string) bool {
	if dnKeywords[strings.ToUpper(t)] {
		return true
	}
	if len(t) > 4 && strings.EqualFold(t[:4], "OID.") {
		t = t[4:]
	}
	return validOID(t)
}

// validOID reports whether t is two or more dot-separated decimal arcs.
func validOID(t string) bool {
	arcs := strings.Split(t, ".")
	if len(arcs) < 2 {
		return false
	}
	for _, a := range arcs {
		if a == "" {
			return false
		}
		for _, c := range a {
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

func (p *dnParser) quoted() bool {
	p.i++
	for !p.done() {
		switch p.s[p.i] {
		case '\\':
			p.i += 2
			continue
		case '"':
			p.i++
			return true
		}
		p.i++
	}
	return false
}

func (p *dnParser) hexValue() bool {
	p.i++
	start := p.i
	for !p.done() && strings.IndexByte(",;+ ", p.s[p.i]) < 0 {
		p.i++
	}
	der, err := hex.DecodeString(p.s[start:p.i])
	if err != nil || len(der) == 0 {
		return false
	}
	var v asn1.RawValue
	rest, err := asn1.Unmarshal(der, &v)
	return err == nil && len(rest) == 0
}

// plain reads an unquoted value up to an unescaped separator. An escape is
// a backslash and a special character, or two hex digits.
func (p *dnParser) plain() bool {
	for !p.done() {
		c := p.s[p.i]
		switch {
		case c == ',' || c == ';' || c == '+':
			return true
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return false
			}
			n := p.s[p.i+1]
			if strings.IndexByte(",=+<>#;\"\\ ", n) >= 0 {
				p.i += 2
				continue
			}
			if p.i+2 < len(p.s) && isHex(n) && isHex(p.s[p.i+2]) {
				p.i += 3
				continue
			}
			return false
		case c == '"' || c == '<' || c == '>':
			return false
		}
		p.i++
	}
	return true
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}
