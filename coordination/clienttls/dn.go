package clienttls

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// rfc2253Keywords are the attribute types Java's X500Principal.getName()
// writes by keyword; every other type is written as its dotted OID, with
// the value in #hex form.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// ASN.1 string tags Java writes as text; values of other types are written
// as #hex of their DER encoding.
const (
	tagUTF8      = 12
	tagPrintable = 19
	tagT61       = 20
	tagIA5       = 22
	tagGeneral   = 27
	tagBMP       = 30
)

// dnEscapees are the characters Java's RFC 2253 writer escapes with a
// backslash wherever they occur: RFC 2253's list plus '=' and '#'.
const dnEscapees = ",=+<>#;\"\\"

type attributeTypeAndValue struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// SubjectDN formats a DER-encoded X.500 name (a certificate's RawSubject)
// as Java's X500Principal.getName() does, the id ZooKeeper gives an x509
// identity: RDNs from last to first, joined by ','; the attributes of a
// multi-valued RDN in their encoded order, joined by '+'; known types by
// keyword (CN, C, L, ST, O, OU, STREET, DC, UID), others by dotted OID; a
// string value with ",=+<>#;\"\\" backslash-escaped, NUL as \00, and
// leading and trailing spaces and carriage returns escaped; a value under
// an OID, or not of a string type, as '#' and the lowercase hex of its DER
// encoding.
func SubjectDN(raw []byte) (string, error) {
	var rdns []asn1.RawValue
	rest, err := asn1.Unmarshal(raw, &rdns)
	if err != nil {
		return "", err
	}
	if len(rest) != 0 {
		return "", errors.New("clienttls: trailing bytes after the name")
	}
	parts := make([]string, 0, len(rdns))
	for i := len(rdns) - 1; i >= 0; i-- {
		var avas []attributeTypeAndValue
		if _, err := asn1.UnmarshalWithParams(rdns[i].FullBytes, &avas, "set"); err != nil {
			return "", err
		}
		formatted := make([]string, 0, len(avas))
		for _, a := range avas {
			formatted = append(formatted, formatAVA(a))
		}
		parts = append(parts, strings.Join(formatted, "+"))
	}
	return strings.Join(parts, ","), nil
}

// formatAVA writes one attribute type and value.
func formatAVA(a attributeTypeAndValue) string {
	oid := a.Type.String()
	keyword, known := rfc2253Keywords[oid]
	if !known {
		keyword = oid
	}
	text, isString := stringValue(a.Value)
	if !known || !isString {
		return keyword + "=#" + hex.EncodeToString(a.Value.FullBytes)
	}
	return keyword + "=" + escapeDNValue(text)
}

// stringValue decodes a value of one of the string types Java writes as
// text: 8-bit types as ISO 8859-1, BMPString as UTF-16BE, UTF8String as
// UTF-8 (invalid bytes become U+FFFD, as Java's decoder makes them).
func stringValue(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal || v.IsCompound {
		return "", false
	}
	switch v.Tag {
	case tagPrintable, tagT61, tagIA5, tagGeneral:
		runes := make([]rune, len(v.Bytes))
		for i, b := range v.Bytes {
			runes[i] = rune(b)
		}
		return string(runes), true
	case tagBMP:
		units := make([]uint16, 0, len(v.Bytes)/2)
		for i := 0; i+1 < len(v.Bytes); i += 2 {
			units = append(units, uint16(v.Bytes[i])<<8|uint16(v.Bytes[i+1]))
		}
		return string(utf16.Decode(units)), true
	case tagUTF8:
		if utf8.Valid(v.Bytes) {
			return string(v.Bytes), true
		}
		return strings.ToValidUTF8(string(v.Bytes), "\uFFFD"), true
	}
	return "", false
}

// escapeDNValue escapes a string value as Java's RFC 2253 writer does.
func escapeDNValue(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case strings.ContainsRune(dnEscapees, c):
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == 0:
			b.WriteString(`\00`)
		default:
			b.WriteRune(c)
		}
	}
	escaped := []rune(b.String())
	lead := 0
	for lead < len(escaped) && (escaped[lead] == ' ' || escaped[lead] == '\r') {
		lead++
	}
	trail := len(escaped) - 1
	for trail >= 0 && (escaped[trail] == ' ' || escaped[trail] == '\r') {
		trail--
	}
	var out strings.Builder
	for i, c := range escaped {
		if i < lead || i > trail {
			out.WriteByte('\\')
		}
		out.WriteRune(c)
	}
	return out.String()
}
