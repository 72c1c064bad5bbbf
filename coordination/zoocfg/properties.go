package zoocfg

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// property is one key=value pair of a properties file, after escapes are
// decoded and ZooKeeper's trimming is applied.
type property struct {
	key   string
	value string
	line  int // 1-based natural line on which the logical line starts
}

// syntaxError reports a properties file that java.util.Properties itself
// would reject (a malformed \uXXXX escape).
type syntaxError struct {
	line int
	msg  string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("zoo.cfg:%d: %s", e.line, e.msg)
}

// parseProperties splits data into properties the way
// java.util.Properties.load does, then trims keys and values as
// QuorumPeerConfig.parseProperties does:
//
//   - natural lines end at \n, \r or \r\n;
//   - a line whose first non-blank character is # or ! is a comment, and a
//     comment never continues onto the next line;
//   - a logical line continues while its natural line ends in an odd number
//     of backslashes; the backslash goes, and so does the leading blank space
//     of the next natural line;
//   - the key ends at the first unescaped '=', ':' or blank; blanks and at
//     most one '=' or ':' separate it from the value;
//   - \t \n \r \f and \uXXXX are decoded; any other escaped character stands
//     for itself.
//
// "Blank" is space, tab or form feed. Bytes are taken as they are, so UTF-8
// passes through; Java would read them as ISO 8859-1.
func parseProperties(data []byte) ([]property, error) {
	lines := splitLines(data)
	var props []property
	for i := 0; i < len(lines); i++ {
		start := i
		line := trimLeadingBlanks(lines[i])
		if len(line) == 0 || line[0] == '#' || line[0] == '!' {
			continue
		}
		var logical []byte
		for {
			if n := trailingBackslashes(line); n%2 == 1 && i+1 < len(lines) {
				logical = append(logical, line[:len(line)-1]...)
				i++
				line = trimLeadingBlanks(lines[i])
				continue
			} else if n%2 == 1 {
				line = line[:len(line)-1] // at end of input Java drops it too
			}
			logical = append(logical, line...)
			break
		}
		p, err := splitKeyValue(logical, start+1)
		if err != nil {
			return nil, err
		}
		props = append(props, p)
	}
	return props, nil
}

// splitLines returns the natural lines of data without their terminators.
func splitLines(data []byte) [][]byte {
	var lines [][]byte
	for len(data) > 0 {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			lines = append(lines, data)
			break
		}
		lines = append(lines, data[:i])
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return lines
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeadingBlanks(b []byte) []byte {
	for len(b) > 0 && isBlank(b[0]) {
		b = b[1:]
	}
	return b
}

func trailingBackslashes(b []byte) int {
	n := 0
	for i := len(b) - 1; i >= 0 && b[i] == '\\'; i-- {
		n++
	}
	return n
}

// splitKeyValue splits one logical line (leading blanks already removed)
// into its key and value.
func splitKeyValue(l []byte, line int) (property, error) {
	keyLen, valueStart := 0, len(l)
	hasSep, escaped := false, false
	for ; keyLen < len(l); keyLen++ {
		c := l[keyLen]
		if !escaped && (c == '=' || c == ':') {
			valueStart, hasSep = keyLen+1, true
			break
		}
		if !escaped && isBlank(c) {
			valueStart = keyLen + 1
			break
		}
		escaped = c == '\\' && !escaped
	}
	for ; valueStart < len(l); valueStart++ {
		c := l[valueStart]
		if isBlank(c) {
			continue
		}
		if !hasSep && (c == '=' || c == ':') {
			hasSep = true
			continue
		}
		break
	}
	key, err := unescape(l[:keyLen], line)
	if err != nil {
		return property{}, err
	}
	value, err := unescape(l[valueStart:], line)
	if err != nil {
		return property{}, err
	}
	return property{key: trimJava(key), value: trimJava(value), line: line}, nil
}

// unescape decodes the escapes Properties.load understands.
func unescape(b []byte, line int) (string, error) {
	if bytes.IndexByte(b, '\\') < 0 {
		return string(b), nil
	}
	var sb strings.Builder
	var pendingHigh rune = -1 // a UTF-16 high surrogate waiting for its pair
	flush := func() {
		if pendingHigh >= 0 {
			sb.WriteRune(utf8.RuneError)
			pendingHigh = -1
		}
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' || i+1 == len(b) {
			if c != '\\' { // a lone backslash at the very end is dropped
				flush()
				sb.WriteByte(c)
			}
			continue
		}
		i++
		c = b[i]
		if c != 'u' {
			flush()
			sb.WriteByte(decodeEscape(c))
			continue
		}
		r, ok := hex4(b[i+1:])
		if !ok {
			return "", &syntaxError{line: line, msg: `malformed \uxxxx escape`}
		}
		i += 4
		switch {
		case pendingHigh >= 0 && utf16.IsSurrogate(r) && r >= 0xdc00:
			sb.WriteRune(utf16.DecodeRune(pendingHigh, r))
			pendingHigh = -1
		case r >= 0xd800 && r < 0xdc00:
			flush()
			pendingHigh = r
		default:
			flush()
			sb.WriteRune(r) // a lone low surrogate becomes U+FFFD
		}
	}
	flush()
	return sb.String(), nil
}

func decodeEscape(c byte) byte {
	switch c {
	case 't':
		return '\t'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 'f':
		return '\f'
	}
	return c
}

// hex4 decodes the four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// trimJava trims like java.lang.String.trim: every character at or below
// U+0020 goes from both ends.
func trimJava(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}
