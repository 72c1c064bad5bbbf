package acl

import (
	"net/netip"
	"strings"
	"testing"

	"keeper/coordination/zkproto"
)

// FuzzParseIPACL feeds arbitrary ip ACL ids and remote identities to the
// ip provider. It must never panic, must agree with net/netip on every
// plain literal both understand, and whatever it accepts must match the
// identity IPID makes for that address.
func FuzzParseIPACL(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8", "1.2.3.4", "::1", "fe80::/10", "-1::", "010.0.0.1/+8", "::ffff:1.2.3.4", "1::2::3", "/", ""} {
		f.Add(s, "10.1.2.3")
	}
	f.Fuzz(func(t *testing.T, aclID, remote string) {
		_ = matchIP(remote, aclID)
		_, _ = Fixup([]zkproto.ACL{{Perms: 1, ID: zkproto.ID{Scheme: "ip", ID: aclID}}}, nil)

		addr, bits, ok := parseIPACL(aclID)
		if ok && (bits < 0 || bits > addr.BitLen()) {
			t.Fatalf("parseIPACL(%q) gave bits %d for %v", aclID, bits, addr)
		}
		if ok && !strings.Contains(aclID, "/") {
			// The ACL's own address must match the identity a connection
			// from that address gets, unless it is IPv4-mapped IPv6, which
			// IPID turns into IPv4 as Java does.
			if !addr.Is4In6() && !matchIP(IPID(addr).ID, aclID) {
				t.Fatalf("ACL %q (%v) does not match its own identity %q", aclID, addr, IPID(addr).ID)
			}
		}
		if n, err := netip.ParseAddr(aclID); err == nil && n.Zone() == "" && !(n.Is6() && strings.Contains(aclID, ".")) {
			if got, ok := parseAddr(aclID); !ok || got != n {
				t.Fatalf("parseAddr(%q) = %v, %v; netip says %v", aclID, got, ok, n)
			}
		}
	})
}
