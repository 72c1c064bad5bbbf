package acl

import (
	"net/netip"
	"strconv"
	"strings"

	"keeper/coordination/zkproto"
)

// IPID returns the ip identity a connection from addr starts with, spelled
// as Java's InetAddress.getHostAddress spells it: dotted quad for IPv4
// (IPv4-mapped IPv6 addresses count as IPv4, as Java unmaps them), and
// eight uncompressed lowercase hex groups for IPv6 ("0:0:0:0:0:0:0:1").
// The zone is dropped: Java appends "%scope", which then never matches an
// ip ACL; without it a link-local client can match one. addr must be valid.
func IPID(addr netip.Addr) zkproto.ID {
	return zkproto.ID{Scheme: SchemeIP, ID: formatAddr(addr)}
}

func formatAddr(addr netip.Addr) string {
	addr = addr.Unmap().WithZone("")
	if !addr.Is6() {
		return addr.String()
	}
	b := addr.As16()
	var sb strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		sb.WriteString(strconv.FormatUint(uint64(b[i])<<8|uint64(b[i+1]), 16))
	}
	return sb.String()
}

// parseIPACL parses an ip ACL id, "addr" or "addr/bits", as ZooKeeper's
// IPAuthenticationProvider does. With no "/bits" the whole address counts.
func parseIPACL(id string) (addr netip.Addr, bits int, ok bool) {
	text, bitsText, hasBits := strings.Cut(id, "/")
	addr, ok = parseAddr(text)
	if !ok {
		return netip.Addr{}, 0, false
	}
	bits = addr.BitLen()
	if hasBits {
		b, err := strconv.ParseInt(bitsText, 10, 32) // Java Integer.parseInt: sign allowed
		if err != nil || b < 0 || int(b) > addr.BitLen() {
			return netip.Addr{}, 0, false
		}
		bits = int(b)
	}
	return addr, bits, true
}

// matchIP reports whether the connection identity remote falls inside the
// ip ACL id acl. Both are masked to the ACL's bits and compared; an IPv4
// identity never matches an IPv6 ACL or the other way round.
func matchIP(remote, acl string) bool {
	aclAddr, bits, ok := parseIPACL(acl)
	if !ok {
		return false
	}
	remoteAddr, ok := parseAddr(remote)
	if !ok || remoteAddr.Is4() != aclAddr.Is4() {
		return false
	}
	p1, err1 := aclAddr.Prefix(bits)
	p2, err2 := remoteAddr.Prefix(bits)
	return err1 == nil && err2 == nil && p1.Addr() == p2.Addr()
}

// parseAddr parses an address literal with ZooKeeper's rules rather than
// Go's, because the two disagree at the edges and the ACL text is
// replicated: text with a ':' is IPv6, text with a '.' is IPv4.
//
//   - IPv4: four dot-separated decimal numbers 0..255 as Java's
//     Integer.parseInt reads them, so leading zeros ("010" is ten) and a
//     sign ("+1", "-0") are accepted.
//   - IPv6: at most one "::"; groups of 1..4 hex digits (a sign counts as a
//     character and is accepted: "-1" is ffff); no embedded IPv4 and no
//     zone.
//
// Java also accepts non-ASCII Unicode digits here; this parser accepts only
// ASCII ones.
func parseAddr(s string) (netip.Addr, bool) {
	switch {
	case strings.Contains(s, ":"):
		return parseV6(s)
	case strings.Contains(s, "."):
		return parseV4(s)
	}
	return netip.Addr{}, false
}

func parseV4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return netip.Addr{}, false
	}
	var b [4]byte
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 32)
		if err != nil || v < 0 || v > 255 {
			return netip.Addr{}, false
		}
		b[i] = byte(v)
	}
	return netip.AddrFrom4(b), true
}

func parseV6(s string) (netip.Addr, bool) {
	var head, tail []string
	switch parts := strings.Split(s, "::"); len(parts) {
	case 1:
		head = strings.Split(parts[0], ":")
		if len(head) != 8 {
			return netip.Addr{}, false
		}
	case 2:
		if parts[0] != "" {
			head = strings.Split(parts[0], ":")
		}
		if parts[1] != "" {
			tail = strings.Split(parts[1], ":")
		}
		if len(head)+len(tail) >= 8 { // "::" must stand for at least one group
			return netip.Addr{}, false
		}
	default:
		return netip.Addr{}, false
	}
	var b [16]byte
	if !putV6Groups(b[:], head) || !putV6Groups(b[16-2*len(tail):], tail) {
		return netip.Addr{}, false
	}
	return netip.AddrFrom16(b), true
}

// putV6Groups writes each group as two big-endian bytes into b.
func putV6Groups(b []byte, groups []string) bool {
	for i, g := range groups {
		if g == "" || len(g) > 4 {
			return false
		}
		v, err := strconv.ParseInt(g, 16, 32)
		if err != nil {
			return false
		}
		b[2*i] = byte(v >> 8)
		b[2*i+1] = byte(v)
	}
	return true
}
