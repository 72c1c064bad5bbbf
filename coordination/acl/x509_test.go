package acl

import (
	"errors"
	"reflect"
	"testing"

	"keeper/coordination/zkproto"
)

// TestValidDN compares ValidDN with what Java's X500Principal(String)
// accepted for the same strings (Java 17), which is the x509 provider's
// isValid for an ACL id.
func TestValidDN(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", true},
		{"CN=client,O=keeper,C=US", true},
		{"cn=x;o=y", true},
		{"CN=a+OU=b", true},
		{`OU=a\+b+CN=multi,O=Keeper\, Inc.`, true},
		{`CN=\ lead\#trail\ `, true},
		{`1.2.840.113549.1.9.1=#0c0f6f7073406578616d706c652e636f6d,CN=\#hash`, true},
		{"OID.2.5.4.3=x", true},
		{"EMAILADDRESS=a@b", true},
		{`CN="quoted, value"`, true},
		{"foo", false},
		{"CN", false},
		{"FOO=bar", false},
		{"CN=a,", false},
		{",CN=a", false},
		{"CN=#zz", false},
		{"CN=#0c01", false},
		{`CN=a"b`, false},
		{`CN=a\`, false},
		{"CN=", true},
		{`CN=x\41y`, true},
		{"2.5=x", true},
		{"5=x", false},
		{"CN=a,,O=b", false},
		{" CN = a , O = b ", true},
	}
	for _, tt := range tests {
		if got := ValidDN(tt.in); got != tt.want {
			t.Errorf("ValidDN(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestX509IDs(t *testing.T) {
	const dn = "CN=client,O=keeper"
	tests := []struct {
		name string
		auth Authenticator
		dn   string
		want []zkproto.ID
	}{
		{"provider off", Authenticator{}, dn, nil},
		{"no certificate", Authenticator{X509: true}, "", nil},
		{"identity", Authenticator{X509: true}, dn, []zkproto.ID{{Scheme: SchemeX509, ID: dn}}},
		{"super user", Authenticator{X509: true, X509SuperUser: dn}, dn,
			[]zkproto.ID{{Scheme: SchemeSuper, ID: dn}, {Scheme: SchemeX509, ID: dn}}},
		{"another super user", Authenticator{X509: true, X509SuperUser: "CN=admin"}, dn, []zkproto.ID{{Scheme: SchemeX509, ID: dn}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.auth.X509IDs(tt.dn)
			var zerr *zkproto.Error
			if tt.want == nil {
				if !errors.As(err, &zerr) || zerr.Code != zkproto.CodeAuthFailed {
					t.Fatalf("X509IDs = %v, %v; want AuthFailed", got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("X509IDs = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestX509ACLs checks x509 entries through Fixup (valid only with the
// provider on, and expanded from auth) and Check (equal DNs match).
func TestX509ACLs(t *testing.T) {
	const dn = "CN=client,O=keeper"
	x509ACL := zkproto.ACL{Perms: zkproto.PermAll, ID: zkproto.ID{Scheme: SchemeX509, ID: dn}}
	authACL := zkproto.ACL{Perms: zkproto.PermRead, ID: zkproto.ID{Scheme: SchemeAuth}}
	ids := []zkproto.ID{{Scheme: SchemeIP, ID: "127.0.0.1"}, {Scheme: SchemeX509, ID: dn}}
	on := Authenticator{X509: true}
	tests := []struct {
		name string
		auth Authenticator
		acls []zkproto.ACL
		want []zkproto.ACL // nil: InvalidACL
	}{
		{"provider on", on, []zkproto.ACL{x509ACL}, []zkproto.ACL{x509ACL}},
		{"provider off", Authenticator{}, []zkproto.ACL{x509ACL}, nil},
		{"invalid dn", on, []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.ID{Scheme: SchemeX509, ID: "client"}}}, nil},
		{"auth expands to x509", on, []zkproto.ACL{authACL},
			[]zkproto.ACL{{Perms: zkproto.PermRead, ID: zkproto.ID{Scheme: SchemeX509, ID: dn}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.auth.Fixup(tt.acls, ids)
			if tt.want == nil {
				if err == nil {
					t.Fatalf("Fixup = %v, want InvalidACL", got)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Fixup = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if !Check([]zkproto.ACL{x509ACL}, zkproto.PermWrite, ids) {
		t.Error("Check: the x509 identity does not match its entry")
	}
	if Check([]zkproto.ACL{x509ACL}, zkproto.PermWrite, []zkproto.ID{{Scheme: SchemeX509, ID: "CN=other"}}) {
		t.Error("Check: another DN matched")
	}
	if got := UserName(zkproto.ID{Scheme: SchemeX509, ID: dn}); got != dn {
		t.Errorf("UserName = %q, want the DN", got)
	}
}

// FuzzValidDN feeds ValidDN arbitrary ACL ids, which come from clients.
func FuzzValidDN(f *testing.F) {
	for _, s := range []string{"", "CN=a,O=b", `CN="x\"y"`, "CN=#0c0161", `CN=\41`, "OID.1.2=x+CN=y;O=z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = ValidDN(s)
	})
}
