package datatree

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Keys of a StatsTrack that Apache ZooKeeper reads.
const (
	QuotaCount          = "count"          // soft node-count limit, or the node count
	QuotaBytes          = "bytes"          // soft data-bytes limit, or the data bytes
	QuotaCountHardLimit = "countHardLimit" // node-count limit enforced with enforceQuota
	QuotaByteHardLimit  = "byteHardLimit"  // data-bytes limit enforced with enforceQuota
)

// ErrQuotaFormat is wrapped by ParseStatsTrack's errors: the data of a
// zookeeper_limits or zookeeper_stats node that ZooKeeper's StatsTrack
// cannot parse either (it throws, where keeper returns the error).
var ErrQuotaFormat = errors.New("datatree: malformed quota data")

// StatsTrack is the content of a quota's zookeeper_limits or
// zookeeper_stats node (Apache ZooKeeper's StatsTrack): named int64 values.
// A value never set reads as -1, which means "no limit" in a limits node.
// The zero value holds nothing.
type StatsTrack struct {
	values map[string]int64
}

// ParseStatsTrack reads node data as ZooKeeper 3.7+ does: the UTF-8 text
// (an invalid byte reads as U+FFFD) is split at every run of ',' and ';'
// into key=value pairs. Each pair is split at '='; trailing empty pieces
// are dropped, the first piece is the key, the second the value, and any
// further pieces are ignored; an empty value means -1. The value is a
// decimal long as Java's Long.parseLong reads it (an optional sign, then
// digits, Unicode decimal digits included). A later key replaces an
// earlier one. Empty data holds nothing.
//
// So the 3.4 form "count=5,bytes=100" and the 3.7+ form
// "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=5" both parse. Nil
// data (a null buffer), a pair without a value ("count", "count=", or an
// empty leading pair as in ",count=1") and a value that is not a long are
// errors wrapping ErrQuotaFormat: ZooKeeper throws on them.
func ParseStatsTrack(data []byte) (StatsTrack, error) {
	if data == nil {
		return StatsTrack{}, fmt.Errorf("%w: null data", ErrQuotaFormat)
	}
	st := StatsTrack{values: make(map[string]int64)}
	text := javaString(data)
	if text == "" {
		return st, nil
	}
	for _, pair := range javaSplit(text, func(c byte) bool { return c == ',' || c == ';' }, true) {
		kv := javaSplit(pair, func(c byte) bool { return c == '=' }, false)
		if len(kv) < 2 {
			return StatsTrack{}, fmt.Errorf("%w: %q has no value in %q", ErrQuotaFormat, pair, text)
		}
		v := int64(-1)
		if kv[1] != "" {
			var ok bool
			if v, ok = javaParseLong(kv[1]); !ok {
				return StatsTrack{}, fmt.Errorf("%w: %q is not a long in %q", ErrQuotaFormat, kv[1], text)
			}
		}
		st.values[kv[0]] = v
	}
	return st, nil
}

// Get returns the value of key, or -1 if it was never set.
func (s StatsTrack) Get(key string) int64 {
	if v, ok := s.values[key]; ok {
		return v
	}
	return -1
}

// Set sets key to v.
func (s *StatsTrack) Set(key string, v int64) {
	if s.values == nil {
		s.values = make(map[string]int64)
	}
	s.values[key] = v
}

// Count returns the count value (-1 if unset).
func (s StatsTrack) Count() int64 { return s.Get(QuotaCount) }

// Bytes returns the bytes value (-1 if unset).
func (s StatsTrack) Bytes() int64 { return s.Get(QuotaBytes) }

// CountHardLimit returns the countHardLimit value (-1 if unset).
func (s StatsTrack) CountHardLimit() int64 { return s.Get(QuotaCountHardLimit) }

// ByteHardLimit returns the byteHardLimit value (-1 if unset).
func (s StatsTrack) ByteHardLimit() int64 { return s.Get(QuotaByteHardLimit) }

// String formats s as ZooKeeper 3.7+ writes it: "count=C,bytes=B" (-1 for
// either if unset), then, if any other key is set, "=" and ";key=value" for
// each in Java's string order, e.g.
// "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=5". The stray "="
// makes 3.4's parser, which reads only count and bytes, ignore the rest.
func (s StatsTrack) String() string {
	var b strings.Builder
	b.WriteString(QuotaCount + "=")
	b.WriteString(strconv.FormatInt(s.Count(), 10))
	b.WriteString("," + QuotaBytes + "=")
	b.WriteString(strconv.FormatInt(s.Bytes(), 10))
	var rest []string
	for k := range maps.Keys(s.values) {
		if k != QuotaCount && k != QuotaBytes {
			rest = append(rest, k)
		}
	}
	if len(rest) == 0 {
		return b.String()
	}
	slices.SortFunc(rest, compareUTF16)
	b.WriteByte('=')
	for _, k := range rest {
		b.WriteString(";" + k + "=")
		b.WriteString(strconv.FormatInt(s.values[k], 10))
	}
	return b.String()
}

// javaString decodes data as Java's new String(data, UTF_8) does for valid
// input; each byte of an invalid sequence becomes U+FFFD.
func javaString(data []byte) string {
	if utf8.Valid(data) {
		return string(data)
	}
	var b strings.Builder
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		b.WriteRune(r)
		data = data[size:]
	}
	return b.String()
}

// javaSplit splits s as Java's String.split does with a regular expression
// that matches one separator byte (merge: a run of them): every match
// ends a piece, a match at the start gives an empty first piece, trailing
// empty pieces are dropped, and without any match the result is s alone.
func javaSplit(s string, isSep func(byte) bool, merge bool) []string {
	var parts []string
	start, matched := 0, false
	for i := 0; i < len(s); {
		if !isSep(s[i]) {
			i++
			continue
		}
		j := i + 1
		for merge && j < len(s) && isSep(s[j]) {
			j++
		}
		parts = append(parts, s[start:i])
		matched, start, i = true, j, j
	}
	if !matched {
		return []string{s}
	}
	parts = append(parts, s[start:])
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// javaParseLong parses s as Java's Long.parseLong(s, 10) does: an optional
// '+' or '-', then at least one decimal digit of any script, within int64.
func javaParseLong(s string) (int64, bool) {
	neg := false
	switch {
	case s == "":
		return 0, false
	case s[0] == '-':
		neg, s = true, s[1:]
	case s[0] == '+':
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	limit := uint64(1<<63 - 1)
	if neg {
		limit = 1 << 63
	}
	var n uint64
	for _, r := range s {
		d := javaDigit(r)
		if d < 0 || n > (limit-uint64(d))/10 {
			return 0, false
		}
		n = n*10 + uint64(d)
	}
	if neg {
		return int64(-n), true // -(1<<63) wraps to math.MinInt64, as intended
	}
	return int64(n), true
}

// javaDigit is Character.digit(r, 10): the value of a decimal digit of any
// script, or -1. Unicode lays each script's digits out as a run of ten
// starting at zero, and unicode.Nd's ranges start at a zero.
func javaDigit(r rune) int {
	if r >= '0' && r <= '9' {
		return int(r - '0')
	}
	if r < utf8.RuneSelf || !unicode.Is(unicode.Nd, r) {
		return -1
	}
	for _, rg := range unicode.Nd.R16 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	return -1
}

// compareUTF16 orders strings as Java's String.compareTo does: by UTF-16
// code unit.
func compareUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}
