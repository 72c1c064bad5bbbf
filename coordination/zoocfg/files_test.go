package zoocfg

import (
	"strings"
	"testing"
)

// The expected bytes below are what Apache ZooKeeper 3.8.0's
// QuorumPeerConfig.writeDynamicConfig and editStaticConfig wrote for the
// same input (run with its jar, not read off its source).

func TestDynamicFileData(t *testing.T) {
	e, err := ParseNextDynamic([]byte("server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n"+
		"server.10=127.0.0.1:2890:3890:observer;127.0.0.1:2190\n"+
		"server.2=[::1]:2889:3889:participant;2182\nversion=100000003"), "zoo.cfg.dynamic.next")
	if err != nil {
		t.Fatal(err)
	}
	servers := "server.10=127.0.0.1:2890:3890:observer;127.0.0.1:2190\n" +
		"server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n" +
		"server.2=[0:0:0:0:0:0:0:1]:2889:3889:participant;0.0.0.0:2182"
	if got := string(e.DynamicFileData(false)); got != servers {
		t.Fatalf("dynamic file:\n%s\nwant\n%s", got, servers)
	}
	if got, want := string(e.DynamicFileData(true)), servers+"\nversion=100000003"; got != want {
		t.Fatalf("next file:\n%s\nwant\n%s", got, want)
	}
}

func TestEditStatic(t *testing.T) {
	static := "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=/tmp/zk\nclientPort=2181\nreconfigEnabled=true\n" +
		"standaloneEnabled=false\n4lw.commands.whitelist=*\nserver.1=127.0.0.1:2888:3888:participant;2181\n" +
		"server.2=127.0.0.1:2889:3889\npeerType=participant\n  clientPortAddress = 127.0.0.1  \n" +
		"autopurge.purgeInterval=1\ntickTime=3000\n"
	dyn := "/tmp/zkoracle/zoo.cfg.dynamic.100000003"
	tests := []struct {
		name  string
		erase bool
		want  string
	}{
		{"client address in the dynamic file", true, "autopurge.purgeInterval=1\ndataDir=/tmp/zk\n4lw.commands.whitelist=*\n" +
			"syncLimit=5\nreconfigEnabled=true\nstandaloneEnabled=false\ninitLimit=10\ntickTime=3000\n" +
			"dynamicConfigFile=/tmp/zkoracle/zoo.cfg.dynamic.100000003\n"},
		{"client address kept", false, "autopurge.purgeInterval=1\ndataDir=/tmp/zk\n4lw.commands.whitelist=*\n" +
			"syncLimit=5\nreconfigEnabled=true\nclientPortAddress=127.0.0.1\nstandaloneEnabled=false\nclientPort=2181\n" +
			"initLimit=10\ntickTime=3000\ndynamicConfigFile=/tmp/zkoracle/zoo.cfg.dynamic.100000003\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EditStatic([]byte(static), dyn, tc.erase)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
			// Rewritten again (the next reconfiguration), the keys stay and
			// the pointer is replaced, not repeated; the order may change,
			// as the table behind Properties fills in another order.
			again, err := EditStatic(got, dyn+"0", tc.erase)
			if err != nil || len(again) != len(got)+1 || strings.Count(string(again), "dynamicConfigFile=") != 1 {
				t.Fatalf("rewriting the rewritten file gave\n%s\n(%v)", again, err)
			}
		})
	}
}
