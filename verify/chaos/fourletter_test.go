package chaos

import (
	"testing"
)

func TestParseFourLetter(t *testing.T) {
	s, err := ParseSrvr("Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/1\nZxid: 0x20000001a\nMode: follower\nNode count: 5\n")
	if err != nil || s != (Srvr{Mode: "follower", Zxid: 0x20000001a}) {
		t.Fatalf("srvr: %+v %v", s, err)
	}
	s, err = ParseSrvr("This ZooKeeper instance is not currently serving requests\n")
	if err != nil || s.Mode != "" {
		t.Fatalf("srvr of a server not serving: %+v %v", s, err)
	}
	h, err := ParseHash("100000003: -123\n20000001a: 456\n")
	if err != nil || h != (Hash{Zxid: 0x20000001a, Digest: 456}) {
		t.Fatalf("hash: %+v %v", h, err)
	}
	for _, bad := range []string{"", "zz: 1", "1: x", "nonsense"} {
		if _, err := ParseHash(bad); err == nil {
			t.Errorf("hash %q parsed", bad)
		}
	}
	m := ParseMntr("zk_version\t3.8.0\nzk_ephemerals_count\t2\n")
	if m["ephemerals_count"] != "2" || m["version"] != "3.8.0" {
		t.Fatalf("mntr: %v", m)
	}
}

// FuzzParseFourLetter feeds arbitrary server replies to the parsers:
// rejecting garbage is fine, panicking is not.
func FuzzParseFourLetter(f *testing.F) {
	f.Add("Zxid: 0x20000001a\nMode: leader\n")
	f.Add("100000003: -123\n")
	f.Add("zk_ephemerals_count\t0\n")
	f.Fuzz(func(t *testing.T, reply string) {
		_, _ = ParseSrvr(reply)
		_, _ = ParseHash(reply)
		_ = ParseMntr(reply)
	})
}
