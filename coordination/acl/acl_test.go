package acl

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"keeper/coordination/zkproto"
)

func id(scheme, s string) zkproto.ID { return zkproto.ID{Scheme: scheme, ID: s} }

func entry(perms int32, scheme, s string) zkproto.ACL {
	return zkproto.ACL{Perms: perms, ID: id(scheme, s)}
}

const userPass = "user:smGaoVKd/cQkjm7b88GyorAUz20=" // DigestID("user:pass"), docs/zookeeper-protocol.md §7.4

func TestDigestID(t *testing.T) {
	tests := []struct{ auth, want string }{
		{"user:pass", userPass},
		{"", ":2jmj7l5rSw0yVb/vlWAYkK/YBwk="},               // sha1("")
		{"nocolon", "nocolon:Ra+cHr2ZoHvBjtNArFGNGlVie4g="}, // user is everything
		{"a:b:c", "a:cLzgnoJ6mP5qz3w+mwvPE2vDgu0="},         // user stops at the first ':'
		{"super:secret", "super:lK75jTNcA+U9vtVEw5vB51mj/w4="},
	}
	for _, tt := range tests {
		if got := DigestID([]byte(tt.auth)); got != tt.want {
			t.Errorf("DigestID(%q) = %q, want %q", tt.auth, got, tt.want)
		}
	}
	// The hash covers the whole input, not just the password.
	if DigestID([]byte("a:b:c")) == DigestID([]byte("a:b:d")) {
		t.Error("DigestID ignores text after the second ':'")
	}
}

func TestCheck(t *testing.T) {
	ip4 := []zkproto.ID{id("ip", "10.1.2.3")}
	ip6 := []zkproto.ID{id("ip", "0:0:0:0:0:0:0:1")}
	dig := []zkproto.ID{id("ip", "127.0.0.1"), id("digest", userPass)}
	super := []zkproto.ID{id("ip", "127.0.0.1"), id("digest", "admin:x"), id("super", "")}
	tests := []struct {
		name string
		acls []zkproto.ACL
		perm int32
		ids  []zkproto.ID
		want bool
	}{
		{"nil list allows", nil, zkproto.PermAdmin, nil, true},
		{"empty list allows", []zkproto.ACL{}, zkproto.PermWrite, ip4, true},
		{"world anyone with perm", zkproto.OpenACLUnsafe, zkproto.PermWrite, nil, true},
		{"world anyone without perm", zkproto.ReadACLUnsafe, zkproto.PermWrite, ip4, false},
		{"world other id never matches", []zkproto.ACL{entry(31, "world", "someone")}, zkproto.PermRead, []zkproto.ID{id("world", "someone")}, false},
		{"super bypasses", []zkproto.ACL{entry(0, "digest", "x:y")}, zkproto.PermAdmin, super, true},
		{"super with any id text", []zkproto.ACL{entry(1, "ip", "1.1.1.1")}, zkproto.PermRead, []zkproto.ID{id("super", "whatever")}, true},
		{"digest exact", []zkproto.ACL{entry(31, "digest", userPass)}, zkproto.PermDelete, dig, true},
		{"digest other user", []zkproto.ACL{entry(31, "digest", "other:smGaoVKd/cQkjm7b88GyorAUz20=")}, zkproto.PermRead, dig, false},
		{"digest wrong perm", []zkproto.ACL{entry(zkproto.PermRead, "digest", userPass)}, zkproto.PermWrite, dig, false},
		{"digest needs digest identity", []zkproto.ACL{entry(31, "digest", "127.0.0.1")}, zkproto.PermRead, dig, false},
		{"second entry grants", []zkproto.ACL{entry(zkproto.PermRead, "world", "anyone"), entry(zkproto.PermWrite, "digest", userPass)}, zkproto.PermWrite, dig, true},
		{"any bit of a multi-bit perm", []zkproto.ACL{entry(zkproto.PermAdmin, "digest", userPass)}, zkproto.PermRead | zkproto.PermAdmin, dig, true},
		{"ip exact", []zkproto.ACL{entry(31, "ip", "10.1.2.3")}, zkproto.PermRead, ip4, true},
		{"ip /8", []zkproto.ACL{entry(31, "ip", "10.0.0.0/8")}, zkproto.PermRead, ip4, true},
		{"ip /16 miss", []zkproto.ACL{entry(31, "ip", "10.2.0.0/16")}, zkproto.PermRead, ip4, false},
		{"ip v6 loopback", []zkproto.ACL{entry(31, "ip", "::1")}, zkproto.PermRead, ip6, true},
		{"ip family mismatch", []zkproto.ACL{entry(31, "ip", "::/0")}, zkproto.PermRead, ip4, false},
		{"ip family mismatch v4 /0", []zkproto.ACL{entry(31, "ip", "0.0.0.0/0")}, zkproto.PermRead, ip6, false},
		{"ip ACL vs digest identity", []zkproto.ACL{entry(31, "ip", "10.1.2.3")}, zkproto.PermRead, []zkproto.ID{id("digest", "10.1.2.3")}, false},
		{"unknown scheme never matches", []zkproto.ACL{entry(31, "sasl", "bob")}, zkproto.PermRead, []zkproto.ID{id("sasl", "bob")}, false},
		{"no identities", []zkproto.ACL{entry(31, "digest", userPass)}, zkproto.PermRead, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Check(tt.acls, tt.perm, tt.ids); got != tt.want {
				t.Errorf("Check(%v, %d, %v) = %v, want %v", tt.acls, tt.perm, tt.ids, got, tt.want)
			}
		})
	}
}

func TestMatchIP(t *testing.T) {
	tests := []struct {
		remote, acl string
		want        bool
	}{
		{"192.168.1.7", "192.168.1.7", true},
		{"192.168.1.7", "192.168.1.8", false},
		{"192.168.1.7", "192.168.1.0/24", true},
		{"192.168.1.7", "192.168.1.0/29", true},
		{"192.168.1.8", "192.168.1.0/29", false},
		{"192.168.1.7", "192.168.1.7/32", true},
		{"192.168.1.7", "1.2.3.4/0", true},
		{"192.168.1.7", "192.168.1.7/33", false},   // bits out of range
		{"192.168.1.7", "192.168.1.7/-1", false},   // negative bits
		{"192.168.1.7", "192.168.1.7/", false},     // empty bits
		{"192.168.1.7", "192.168.1.7/+32", true},   // Java parseInt takes a sign
		{"192.168.1.7", "192.168.001.007", true},   // leading zeros are decimal
		{"10.0.0.1", "010.0.0.1", true},            // not octal
		{"192.168.1.7", "192.168.1.-0/32", false},  // -0 is 0, not 7
		{"192.168.1.0", "192.168.1.-0/32", true},   // ... and is accepted
		{"192.168.1.7", "192.168.1", false},        // three parts
		{"192.168.1.7", "192.168.1.7.", false},     // trailing empty part
		{"192.168.1.7", "192.168.1.256", false},    // out of range
		{"192.168.1.7", "host.example", false},     // not numeric
		{"0:0:0:0:0:0:0:1", "::1", true},           // Java's spelling of the remote
		{"::1", "0:0:0:0:0:0:0:1", true},           // and Go's
		{"0:0:0:0:0:0:0:1", "::1/128", true},       // full length
		{"0:0:0:0:0:0:0:1", "::2/127", false},      // ::2/127 covers ::2-::3
		{"0:0:0:0:0:0:0:3", "::2/127", true},       // ...
		{"fe80:0:0:0:1:2:3:4", "fe80::/10", true},  // link-local
		{"febf:0:0:0:1:2:3:4", "fe80::/10", true},  // top of fe80::/10
		{"fec0:0:0:0:1:2:3:4", "fe80::/10", false}, // just outside
		{"2001:db8:0:0:0:0:0:1", "2001:DB8::/32", true},
		{"2001:db8:0:0:0:0:0:1", "2001:db8::/129", false},
		{"2001:db8:0:0:0:0:0:1", "2001:db8::1::", false},         // two "::"
		{"2001:db8:0:0:0:0:0:1", "2001:db8:0:0:0:0:0:1:", false}, // nine groups
		{"2001:db8:0:0:0:0:0:1", "2001:db8:0:0:0:0:1", false},    // seven groups, no "::"
		{"2001:db8:0:0:0:0:0:1", "2001:db8::0:0:0:0:0:1", false}, // "::" standing for no group
		{"2001:db8:0:0:0:0:0:1", "2001:0db8::00001", false},      // group too long
		{"ffff:0:0:0:0:0:0:0", "-1::", true},                     // Java parseInt(-1, 16)
		{"0:0:0:0:0:ffff:102:304", "::ffff:1.2.3.4", false},      // no embedded IPv4
		{"0:0:0:0:0:ffff:102:304", "::ffff:102:304", true},       // mapped, written in hex
		{"1.2.3.4", "::ffff:102:304", false},                     // ... is still IPv6
		{"fe80:0:0:0:0:0:0:1%eth0", "fe80::1", false},            // Java's zoned spelling never parses
		{"fe80:0:0:0:0:0:0:1", "fe80::1%eth0", false},            // no zones in ACLs
		{"1.2.3.4", "1.2.3.4/8/8", false},
		{"not-an-ip", "0.0.0.0/0", false},
		{"", "0.0.0.0/0", false},
	}
	for _, tt := range tests {
		if got := matchIP(tt.remote, tt.acl); got != tt.want {
			t.Errorf("matchIP(%q, %q) = %v, want %v", tt.remote, tt.acl, got, tt.want)
		}
	}
}

func TestParseAddrAgreesWithNetip(t *testing.T) {
	for _, s := range []string{
		"0.0.0.0", "255.255.255.255", "127.0.0.1", "::", "::1", "1::", "1:2:3:4:5:6:7:8",
		"1:2:3::7:8", "fe80::1:2", "2001:db8::", "::ffff:102:304", "A:B:C:D:E:F:0:1",
	} {
		want := netip.MustParseAddr(s)
		got, ok := parseAddr(s)
		if !ok || got != want {
			t.Errorf("parseAddr(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
}

func TestIPID(t *testing.T) {
	tests := []struct{ addr, want string }{
		{"127.0.0.1", "127.0.0.1"},
		{"::1", "0:0:0:0:0:0:0:1"},
		{"2001:db8::ff00:42", "2001:db8:0:0:0:0:ff00:42"},
		{"::ffff:10.0.0.1", "10.0.0.1"}, // Java unmaps
		{"fe80::1%eth0", "fe80:0:0:0:0:0:0:1"},
	}
	for _, tt := range tests {
		got := IPID(netip.MustParseAddr(tt.addr))
		if got != id("ip", tt.want) {
			t.Errorf("IPID(%s) = %v, want ip:%s", tt.addr, got, tt.want)
		}
		// The identity's own text, used as an ACL, must cover it.
		if !Check([]zkproto.ACL{entry(1, "ip", tt.want)}, 1, []zkproto.ID{got}) {
			t.Errorf("identity %v does not match ACL ip:%s", got, tt.want)
		}
	}
}

func TestFixup(t *testing.T) {
	digestID := id("digest", userPass)
	conn := []zkproto.ID{id("ip", "127.0.0.1"), digestID, id("super", ""), id("digest", "bob:h")}
	tests := []struct {
		name    string
		in      []zkproto.ACL
		authIDs []zkproto.ID
		want    []zkproto.ACL // nil means InvalidACL
	}{
		{"world anyone", zkproto.OpenACLUnsafe, nil, zkproto.OpenACLUnsafe},
		{"nil list", nil, conn, nil},
		{"empty list", []zkproto.ACL{}, conn, nil},
		{"world someone", []zkproto.ACL{entry(31, "world", "someone")}, nil, nil},
		{"exact duplicates removed, order kept",
			[]zkproto.ACL{entry(1, "world", "anyone"), entry(31, "ip", "10.0.0.0/8"), entry(1, "world", "anyone"), entry(31, "ip", "10.0.0.0/8")}, nil,
			[]zkproto.ACL{entry(1, "world", "anyone"), entry(31, "ip", "10.0.0.0/8")}},
		{"different perms are not duplicates",
			[]zkproto.ACL{entry(1, "world", "anyone"), entry(3, "world", "anyone")}, nil,
			[]zkproto.ACL{entry(1, "world", "anyone"), entry(3, "world", "anyone")}},
		{"auth expands to digest identities only", zkproto.CreatorAllACL, conn,
			[]zkproto.ACL{{Perms: 31, ID: digestID}, entry(31, "digest", "bob:h")}},
		{"auth id is ignored", []zkproto.ACL{entry(5, "auth", "whatever")}, conn,
			[]zkproto.ACL{{Perms: 5, ID: digestID}, entry(5, "digest", "bob:h")}},
		{"auth with ip only", zkproto.CreatorAllACL, []zkproto.ID{id("ip", "127.0.0.1")}, nil},
		{"auth with super only", zkproto.CreatorAllACL, []zkproto.ID{id("super", "")}, nil},
		{"auth with nothing", zkproto.CreatorAllACL, nil, nil},
		{"auth repeated identity", zkproto.CreatorAllACL, []zkproto.ID{digestID, digestID},
			[]zkproto.ACL{{Perms: 31, ID: digestID}}},
		{"auth plus explicit entry keeps both", []zkproto.ACL{entry(31, "auth", ""), {Perms: 31, ID: digestID}}, []zkproto.ID{digestID},
			[]zkproto.ACL{{Perms: 31, ID: digestID}, {Perms: 31, ID: digestID}}},
		{"digest ok", []zkproto.ACL{entry(31, "digest", userPass)}, nil, []zkproto.ACL{entry(31, "digest", userPass)}},
		{"digest no colon", []zkproto.ACL{entry(31, "digest", "nocolon")}, nil, nil},
		{"digest two colons", []zkproto.ACL{entry(31, "digest", "a:b:c")}, nil, nil},
		{"digest empty hash", []zkproto.ACL{entry(31, "digest", "user:")}, nil, nil},
		{"digest trailing colons dropped as Java split does", []zkproto.ACL{entry(31, "digest", "u:h::")}, nil, []zkproto.ACL{entry(31, "digest", "u:h::")}},
		{"digest empty user", []zkproto.ACL{entry(31, "digest", ":h")}, nil, []zkproto.ACL{entry(31, "digest", ":h")}},
		{"digest empty", []zkproto.ACL{entry(31, "digest", "")}, nil, nil},
		{"ip v4", []zkproto.ACL{entry(31, "ip", "10.0.0.0/8")}, nil, []zkproto.ACL{entry(31, "ip", "10.0.0.0/8")}},
		{"ip v6", []zkproto.ACL{entry(31, "ip", "fe80::/10")}, nil, []zkproto.ACL{entry(31, "ip", "fe80::/10")}},
		{"ip bits too big", []zkproto.ACL{entry(31, "ip", "10.0.0.0/33")}, nil, nil},
		{"ip v6 bits too big", []zkproto.ACL{entry(31, "ip", "::/129")}, nil, nil},
		{"ip garbage", []zkproto.ACL{entry(31, "ip", "localhost")}, nil, nil},
		{"super scheme", []zkproto.ACL{entry(31, "super", "")}, conn, nil},
		{"unknown scheme", []zkproto.ACL{entry(31, "sasl", "bob")}, conn, nil},
		{"one bad entry spoils the list", []zkproto.ACL{entry(31, "world", "anyone"), entry(31, "digest", "x")}, conn, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			got, err := Fixup(tt.in, tt.authIDs)
			if !slices.Equal(in, tt.in) {
				t.Errorf("Fixup modified its input: %v", tt.in)
			}
			if tt.want == nil {
				if !errors.Is(err, zkproto.ErrInvalidACL) || got != nil {
					t.Fatalf("Fixup = %v, %v; want InvalidACL", got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("Fixup = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestAuthenticate(t *testing.T) {
	superID := DigestID([]byte("super:secret"))
	a := Authenticator{SuperDigest: superID}
	remote := netip.MustParseAddr("192.0.2.1")
	tests := []struct {
		name, scheme, auth string
		remote             netip.Addr
		want               []zkproto.ID // nil means AuthFailed
	}{
		{"digest", "digest", "user:pass", remote, []zkproto.ID{id("digest", userPass)}},
		{"digest super", "digest", "super:secret", remote, []zkproto.ID{id("digest", superID), id("super", "")}},
		{"digest super wrong password", "digest", "super:guess", remote, []zkproto.ID{id("digest", DigestID([]byte("super:guess")))}},
		{"digest without colon", "digest", "nocolon", remote, []zkproto.ID{id("digest", DigestID([]byte("nocolon")))}},
		{"ip ignores auth bytes", "ip", "10.9.9.9", remote, []zkproto.ID{id("ip", "192.0.2.1")}},
		{"ip v6", "ip", "", netip.MustParseAddr("::1"), []zkproto.ID{id("ip", "0:0:0:0:0:0:0:1")}},
		{"ip without remote", "ip", "", netip.Addr{}, nil},
		{"world", "world", "anyone", remote, nil},
		{"auth", "auth", "", remote, nil},
		{"super", "super", "", remote, nil},
		{"unknown", "kerberos", "x", remote, nil},
		{"scheme is case sensitive", "Digest", "user:pass", remote, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a.Authenticate(tt.scheme, []byte(tt.auth), tt.remote)
			if tt.want == nil {
				if !errors.Is(err, zkproto.ErrAuthFailed) || got != nil {
					t.Fatalf("Authenticate = %v, %v; want AuthFailed", got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("Authenticate = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	// Without a SuperDigest nobody becomes super, not even with empty auth.
	ids, _ := Authenticator{}.Authenticate("digest", nil, remote)
	if slices.ContainsFunc(ids, func(i zkproto.ID) bool { return i.Scheme == "super" }) {
		t.Errorf("zero Authenticator granted super: %v", ids)
	}
}

func TestAuthenticatorValidate(t *testing.T) {
	for s, ok := range map[string]bool{"": true, userPass: true, "super": false, "a:b:c": false} {
		if err := (Authenticator{SuperDigest: s}).Validate(); (err == nil) != ok {
			t.Errorf("Validate(SuperDigest=%q) = %v, want ok=%v", s, err, ok)
		}
	}
}

func TestMaskDigests(t *testing.T) {
	in := []zkproto.ACL{
		entry(31, "digest", userPass),
		entry(1, "world", "anyone"),
		entry(3, "ip", "10.0.0.0/8"),
		entry(1, "digest", "nocolon"),
		entry(1, "digest", "u:a\nb:c"),
		entry(1, "digest", ":"),
	}
	want := []zkproto.ACL{
		entry(31, "digest", "user:x"),
		entry(1, "world", "anyone"),
		entry(3, "ip", "10.0.0.0/8"),
		entry(1, "digest", "nocolon"),
		entry(1, "digest", "u:x\nb:x"), // Java's '.' stops at line ends
		entry(1, "digest", ":x"),
	}
	orig := slices.Clone(in)
	if got := MaskDigests(in); !slices.Equal(got, want) {
		t.Errorf("MaskDigests = %q, want %q", got, want)
	}
	if !slices.Equal(in, orig) {
		t.Errorf("MaskDigests modified its input")
	}
	if MaskDigests(nil) != nil {
		t.Errorf("MaskDigests(nil) != nil")
	}
}

func TestUserName(t *testing.T) {
	tests := []struct {
		id   zkproto.ID
		want string
	}{
		{id("digest", userPass), "user"},
		{id("ip", "127.0.0.1"), "127.0.0.1"},
		{id("super", ""), ""},
		{id("world", "anyone"), ""},
	}
	for _, tt := range tests {
		if got := UserName(tt.id); got != tt.want {
			t.Errorf("UserName(%v) = %q, want %q", tt.id, got, tt.want)
		}
	}
}

func TestAddIDs(t *testing.T) {
	ip := id("ip", "127.0.0.1")
	d := id("digest", userPass)
	got := AddIDs([]zkproto.ID{ip}, ip, d, d)
	if want := []zkproto.ID{ip, d}; !slices.Equal(got, want) {
		t.Errorf("AddIDs = %v, want %v", got, want)
	}
}
