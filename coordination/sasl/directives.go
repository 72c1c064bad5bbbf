package sasl

import (
	"fmt"
	"strings"
)

// The directives a DIGEST-MD5 client response may carry, as the Java server
// knows them. Others are ignored; note that the nonce count RFC 2831 calls
// "nc" is known only by its long name, so a client's "nc" is ignored and
// the server always computes with a count of 1.
const (
	dirUsername = iota
	dirRealm
	dirNonce
	dirCnonce
	dirNonceCount
	dirQop
	dirDigestURI
	dirResponse
	dirMaxbuf
	dirCharset
	dirCipher
	dirAuthzid
	dirAuthParam
	numDirectives
)

var directiveNames = [numDirectives]string{
	"username", "realm", "nonce", "cnonce", "nonce-count", "qop", "digest-uri",
	"response", "maxbuf", "charset", "cipher", "authzid", "auth-param",
}

// isLWS reports linear white space: CR, LF, space and tab.
func isLWS(b byte) bool { return b == '\r' || b == '\n' || b == ' ' || b == '\t' }

func skipLWS(buf []byte, i int) int {
	for i < len(buf) && isLWS(buf[i]) {
		i++
	}
	return i
}

// parseDirectives splits a client response into its directives as Java's
// DIGEST-MD5 server does: key=value pairs separated by commas and blanks,
// values bare or "quoted" (a backslash escapes the next byte). Keys match
// case-insensitively; a known key given twice fails; unknown keys are
// dropped. A key at the very end without '=' counts with an empty value.
// Values stay raw bytes: the nonce and cnonce are compared and hashed as
// such.
func parseDirectives(buf []byte) ([numDirectives][]byte, error) {
	var out [numDirectives][]byte
	err := parseKeyValues(buf, directiveNames[:], out[:])
	return out, err
}

// parseKeyValues parses buf as parseDirectives does, into out, which holds
// the value of names[i] at i (nil when absent).
func parseKeyValues(buf []byte, names []string, out [][]byte) error {
	var key, value []byte
	gettingKey, quoted, expectSep := true, false, false
	i := skipLWS(buf, 0)
	for i < len(buf) {
		b := buf[i]
		switch {
		case gettingKey:
			switch {
			case b == ',':
				if len(key) != 0 {
					return fail("directive key contains a ','")
				}
				i = skipLWS(buf, i+1)
			case b == '=':
				if len(key) == 0 {
					return fail("empty directive key")
				}
				gettingKey = false
				i = skipLWS(buf, i+1)
				if i >= len(buf) {
					return fail("valueless directive found: %s", key)
				}
				if buf[i] == '"' {
					quoted = true
					i++
				}
			case isLWS(b):
				i = skipLWS(buf, i+1)
				if i >= len(buf) || buf[i] != '=' {
					return fail("'=' expected after key: %s", key)
				}
			default:
				key = append(key, b)
				i++
			}
		case quoted:
			switch b {
			case '\\':
				i++
				if i >= len(buf) {
					return fail("unmatched quote found for directive: %s", key)
				}
				value = append(value, buf[i])
				i++
			case '"':
				i++
				quoted, expectSep = false, true
			default:
				value = append(value, b)
				i++
			}
		case isLWS(b) || b == ',':
			if err := extractDirective(out, names, key, value); err != nil {
				return err
			}
			key, value = nil, nil
			gettingKey, quoted, expectSep = true, false, false
			i = skipLWS(buf, i+1)
		case expectSep:
			return fail("expecting comma or linear whitespace after quoted string")
		default:
			value = append(value, b)
			i++
		}
	}
	if quoted {
		return fail("unmatched quote found for directive: %s", key)
	}
	if len(key) > 0 {
		if err := extractDirective(out, names, key, value); err != nil {
			return err
		}
	}
	return nil
}

func extractDirective(out [][]byte, names []string, key, value []byte) error {
	for i, name := range names {
		if !strings.EqualFold(string(key), name) {
			continue
		}
		if out[i] != nil {
			return fail("peer sent more than one %s directive", name)
		}
		out[i] = append([]byte{}, value...)
		return nil
	}
	return nil
}

// javaParseInt parses s as Java's Integer.parseInt(s, radix) does for ASCII
// digits: an optional sign, then at least one digit, within 32 bits.
func javaParseInt(s string, radix int) (int32, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		d := digitValue(s[i])
		if d < 0 || d >= radix {
			return 0, false
		}
		n = n*int64(radix) + int64(d)
		if n > 1<<31 {
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	if n > 1<<31-1 {
		return 0, false
	}
	return int32(n), true
}

func digitValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	}
	return -1
}

// fail is a failure of the exchange (Java's SaslException).
func fail(format string, args ...any) error {
	return &Error{Reason: "DIGEST-MD5: " + fmt.Sprintf(format, args...)}
}

// abort is an exchange Java's server gives up on with a runtime error:
// ZooKeeper then closes the connection without a reply.
func abort(format string, args ...any) error {
	return &Error{Abort: true, Reason: "DIGEST-MD5: " + fmt.Sprintf(format, args...)}
}
