package clienttls

import (
	"encoding/hex"
	"testing"
)

// TestSubjectDN compares SubjectDN with what Java's
// X500Principal.getName() printed for the same DER names (Java 17).
func TestSubjectDN(t *testing.T) {
	tests := []struct{ der, want string }{
		{"302f310b3009060355040613025553310f300d060355040a13066b6565706572310f300d06035504031306636c69656e74",
			"CN=client,O=keeper,C=US"},
		// A multi-valued RDN keeps its encoded order; ',' and '+' are escaped.
		{"303331153013060355040a130c4b65657065722c20496e632e311a300a060355040b1303612b62300c060355040313056d756c7469",
			`OU=a\+b+CN=multi,O=Keeper\, Inc.`},
		// Leading and trailing spaces, '#', and the special characters.
		{"302e3115301306035504030c0c206c65616423747261696c2031153013060355040a0c0c7122756f3c743e653b735c3d",
			`O=q\"uo\<t\>e\;s\\\=,CN=\ lead\#trail\ `},
		// A type without an RFC 2253 keyword: dotted OID and #hex.
		{"3030310e300c06035504030c052368617368311e301c06092a864886f70d0109010c0f6f7073406578616d706c652e636f6d",
			`1.2.840.113549.1.9.1=#0c0f6f7073406578616d706c652e636f6d,CN=\#hash`},
		{"305331173015060a0992268993f22c64011913076578616d706c6531133011060a0992268993f22c6401191303636f6d31143012060a0992268993f22c64010113046a646f65310d300b0603550405130431323334",
			"2.5.4.5=#130431323334,UID=jdoe,DC=com,DC=example"},
		{"30163114301206035504030c0bc3bc6ec3af63c3b664c3a9", "CN=ünïcödé"},
		{"3000", ""},
	}
	for _, tt := range tests {
		der, err := hex.DecodeString(tt.der)
		if err != nil {
			t.Fatal(err)
		}
		got, err := SubjectDN(der)
		if err != nil {
			t.Errorf("SubjectDN(%s): %v", tt.der, err)
			continue
		}
		if got != tt.want {
			t.Errorf("SubjectDN(%s)\n got %s\nwant %s", tt.der, got, tt.want)
		}
	}
}

// FuzzSubjectDN feeds SubjectDN arbitrary bytes: a client's certificate
// subject comes from the network. It must not panic.
func FuzzSubjectDN(f *testing.F) {
	for _, s := range []string{"3000", "302f310b3009060355040613025553310f300d060355040a13066b6565706572310f300d06035504031306636c69656e74"} {
		der, _ := hex.DecodeString(s)
		f.Add(der)
	}
	f.Fuzz(func(t *testing.T, der []byte) {
		_, _ = SubjectDN(der)
	})
}
