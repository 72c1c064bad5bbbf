package acl

import (
	"slices"
	"testing"

	"keeper/coordination/zkproto"
)

func TestSASLAuthorizedID(t *testing.T) {
	for _, tc := range []struct {
		name                string
		realm               string
		removeHost, rmRealm bool
		authn, authz        string
		want                string
		wantErr             bool
	}{
		{name: "plain name", authn: "bob", authz: "bob", want: "bob"},
		{name: "plain name ignores authzid", authn: "jaasuser", authz: "super", want: "jaasuser"},
		{name: "slashes without realm are a plain name", authn: "a/b/c", authz: "a/b/c", want: "a/b/c"},
		{name: "other realm keeps authzid", authn: "bob@EXAMPLE.COM", authz: "bob@EXAMPLE.COM", want: "bob@EXAMPLE.COM"},
		{name: "other realm takes what the client asked for", authn: "bob@EXAMPLE.COM", authz: "super", want: "super"},
		{name: "empty realm is the default when there is none", authn: "bob@", authz: "x", want: "bob@"},
		{name: "default realm", realm: "EXAMPLE.COM", authn: "bob@EXAMPLE.COM", authz: "x", want: "bob@EXAMPLE.COM"},
		{name: "default realm with host", realm: "EXAMPLE.COM", authn: "zk/host1@EXAMPLE.COM", authz: "x", want: "zk/host1@EXAMPLE.COM"},
		{name: "remove host", realm: "EXAMPLE.COM", removeHost: true, authn: "zk/host1@EXAMPLE.COM", authz: "x", want: "zk@EXAMPLE.COM"},
		{name: "remove realm", realm: "EXAMPLE.COM", rmRealm: true, authn: "zk/host1@EXAMPLE.COM", authz: "x", want: "zk/host1"},
		{name: "remove both", realm: "EXAMPLE.COM", removeHost: true, rmRealm: true, authn: "zk/host1@EXAMPLE.COM", authz: "x", want: "zk"},
		{name: "remove realm of a plain name changes nothing", realm: "EXAMPLE.COM", rmRealm: true, authn: "bob", authz: "x", want: "bob"},
		{name: "remove realm outside the default realm", realm: "EXAMPLE.COM", rmRealm: true, authn: "bob@OTHER", authz: "bob@OTHER", want: "bob@OTHER"},
		{name: "two @", authn: "a@b@c", authz: "a@b@c", wantErr: true},
		{name: "two / before @", authn: "a/b/c@R", authz: "x", wantErr: true},
		{name: "/ in realm", authn: "a@R/x", authz: "x", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Authenticator{KerberosRealm: tc.realm, RemoveHostFromPrincipal: tc.removeHost, RemoveRealmFromPrincipal: tc.rmRealm}
			got, err := a.SASLAuthorizedID(tc.authn, tc.authz)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("SASLAuthorizedID(%q, %q) = %q, %v; want %q (error %v)", tc.authn, tc.authz, got, err, tc.want, tc.wantErr)
			}
			if validSASLACL(tc.authn) == tc.wantErr {
				t.Fatalf("validSASLACL(%q) disagrees with the parse", tc.authn)
			}
		})
	}
}

func TestSASLIDs(t *testing.T) {
	a := Authenticator{SASLSuperUsers: []string{"admin", "root"}}
	if got, want := a.SASLIDs("root"), []zkproto.ID{id("sasl", "root"), id("super", "")}; !slices.Equal(got, want) {
		t.Fatalf("SASLIDs(root) = %v, want %v", got, want)
	}
	if got, want := a.SASLIDs("bob"), []zkproto.ID{id("sasl", "bob")}; !slices.Equal(got, want) {
		t.Fatalf("SASLIDs(bob) = %v, want %v", got, want)
	}
}

func TestSASLCheck(t *testing.T) {
	bobACL := []zkproto.ACL{entry(zkproto.PermAll, "sasl", "bob")}
	readers := []zkproto.ACL{entry(zkproto.PermRead, "sasl", "readers"), entry(zkproto.PermAll, "sasl", "owner")}
	ipOnly := []zkproto.ID{id("ip", "127.0.0.1")}
	for _, tc := range []struct {
		name string
		a    Authenticator
		acls []zkproto.ACL
		perm int32
		ids  []zkproto.ID
		want bool
	}{
		{"same id", Authenticator{SASLProvider: true}, bobACL, zkproto.PermRead, append(ipOnly, id("sasl", "bob")), true},
		{"other id", Authenticator{SASLProvider: true}, bobACL, zkproto.PermRead, append(ipOnly, id("sasl", "eve")), false},
		{"no sasl identity", Authenticator{SASLProvider: true}, bobACL, zkproto.PermRead, ipOnly, false},
		{"without the provider nothing matches", Authenticator{}, bobACL, zkproto.PermRead, append(ipOnly, id("sasl", "bob")), false},
		{"sasl user super matches every sasl entry", Authenticator{SASLProvider: true}, bobACL, zkproto.PermWrite, []zkproto.ID{id("sasl", "super")}, true},
		{"the super identity passes anyway", Authenticator{}, bobACL, zkproto.PermWrite, []zkproto.ID{id("super", "")}, true},
		{"digest with the same name does not match", Authenticator{SASLProvider: true}, bobACL, zkproto.PermRead, []zkproto.ID{id("digest", "bob")}, false},
		{"letAnySaslUserDoX", Authenticator{SASLProvider: true, SASLAnyUser: "readers"}, readers, zkproto.PermRead, []zkproto.ID{id("sasl", "eve")}, true},
		{"letAnySaslUserDoX grants only that entry's perms", Authenticator{SASLProvider: true, SASLAnyUser: "readers"}, readers, zkproto.PermWrite, []zkproto.ID{id("sasl", "eve")}, false},
		{"letAnySaslUserDoX needs a sasl identity", Authenticator{SASLProvider: true, SASLAnyUser: "readers"}, readers, zkproto.PermRead, ipOnly, false},
		{"world still works", Authenticator{SASLProvider: true}, []zkproto.ACL{entry(zkproto.PermRead, "world", "anyone")}, zkproto.PermRead, ipOnly, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.Check(tc.acls, tc.perm, tc.ids); got != tc.want {
				t.Fatalf("Check = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSASLFixup(t *testing.T) {
	ids := []zkproto.ID{id("ip", "127.0.0.1"), id("sasl", "bob"), id("digest", "u:h"), id("super", "")}
	for _, tc := range []struct {
		name     string
		provider bool
		in       []zkproto.ACL
		want     []zkproto.ACL // nil: InvalidACL
	}{
		{"sasl entry", true, []zkproto.ACL{entry(31, "sasl", "bob")}, []zkproto.ACL{entry(31, "sasl", "bob")}},
		{"sasl entry without the provider", false, []zkproto.ACL{entry(31, "sasl", "bob")}, nil},
		{"kerberos names", true, []zkproto.ACL{entry(1, "sasl", "zk/h@R"), entry(1, "sasl", "a/b/c"), entry(1, "sasl", "")},
			[]zkproto.ACL{entry(1, "sasl", "zk/h@R"), entry(1, "sasl", "a/b/c"), entry(1, "sasl", "")}},
		{"malformed kerberos name", true, []zkproto.ACL{entry(31, "sasl", "a@b@c")}, nil},
		{"auth expands sasl in identity order", true, []zkproto.ACL{entry(31, "auth", "")}, []zkproto.ACL{entry(31, "sasl", "bob"), entry(31, "digest", "u:h")}},
		{"auth skips sasl without the provider", false, []zkproto.ACL{entry(31, "auth", "")}, []zkproto.ACL{entry(31, "digest", "u:h")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Authenticator{SASLProvider: tc.provider}.Fixup(tc.in, ids)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("Fixup = %v, want InvalidACL", got)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("Fixup = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	onlySASL := []zkproto.ID{id("ip", "127.0.0.1"), id("sasl", "bob")}
	if _, err := (Authenticator{}).Fixup([]zkproto.ACL{entry(31, "auth", "")}, onlySASL); err == nil {
		t.Fatal("auth with only a sasl identity and no provider: want InvalidACL, as ZooKeeper answers")
	}
}
