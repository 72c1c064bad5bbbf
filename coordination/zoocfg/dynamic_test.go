package zoocfg

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

func TestVersionFromFilename(t *testing.T) {
	tests := []struct {
		name string
		want int64
		ok   bool
	}{
		{"zoo.cfg.dynamic.100000000", 0x100000000, true},
		{"/etc/zk/zoo.cfg.dynamic.0", 0, true},
		{"zoo.cfg.dynamic.1001", 0x1001, true},
		{"zoo.cfg.dynamic.ABC", 0xabc, true},
		{"zoo.cfg.dynamic", 0, false},
		{"zoo.cfg.dynamic.", 0, false},
		{"dyn", 0, false},
		{"zoo.cfg.dynamic.-1", -1, true}, // Long.parseLong takes a sign
		{"zoo.cfg.dynamic.ffffffffffffffff", 0, false},
	}
	for _, tt := range tests {
		got, ok := VersionFromFilename(tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("VersionFromFilename(%q) = %#x, %v; want %#x, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	if got := FormatVersion(-1); got != "ffffffffffffffff" {
		t.Errorf("FormatVersion(-1) = %q", got)
	}
	if got := DynamicFilename("/z/zoo.cfg", 0x100000000); got != "/z/zoo.cfg.dynamic.100000000" {
		t.Errorf("DynamicFilename = %q", got)
	}
}

func TestParseDynamic(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // Data() of the result, or the error
	}{
		{"zoo.cfg.dynamic.100000000",
			"server.1=127.0.0.1:2888:3888:participant\nserver.2=127.0.0.1:2889:3889:observer;2181\n",
			"server.1=127.0.0.1:2888:3888:participant\nserver.2=127.0.0.1:2889:3889:observer;0.0.0.0:2181\nversion=100000000"},
		{"dyn", "server.3=[::1]:1:2;[::1]:3\n# comment\nserver.1 = h:1:2\n",
			"server.1=h:1:2:participant\nserver.3=[0:0:0:0:0:0:0:1]:1:2:participant;[0:0:0:0:0:0:0:1]:3\nversion=0"},
		{"zoo.cfg.dynamic.5", "", "version=5"},
		{"zoo.cfg.dynamic.5", "server.1=h:1:2\nversion=5\n", "zoo.cfg.dynamic.5:2: version: a dynamic configuration file must not hold a version"},
		{"d", "server.1=h:1:2\nclientPort=2181\n", "d:2: clientPort: not allowed in a dynamic configuration file"},
		{"d", "group.1=1:2\n", "d:1: group.1: hierarchical quorums are not supported"},
		{"d", "server.1=h:1\n", `d:1: server.1: invalid value "h:1": want host:quorumPort:electionPort`},
		{"d", "server.x=h:1:2\n", `d:1: server.x: invalid value "h:1:2": server id is not an integer`},
		{"d", "server.1=h:1:2|g:1:2\n", "multiple addresses"},
		{"d", "server.1=h:1:2\nserver.1=g:3:4\n", "server.1=g:3:4:participant\nversion=0"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" "+tt.in, func(t *testing.T) {
			e, err := ParseDynamic([]byte(tt.in), tt.name)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = string(e.Data())
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestParseNextDynamic(t *testing.T) {
	// ZooKeeper writes the next file with its version line, sorted.
	e, err := ParseNextDynamic([]byte("server.1=h:1:2:participant\nserver.2=g:1:2:participant\nversion=200000003"), "zoo.cfg.dynamic.next")
	if err != nil {
		t.Fatal(err)
	}
	if e.Version != 0x200000003 || len(e.Servers) != 2 {
		t.Errorf("got %+v", e)
	}
	if _, err := ParseNextDynamic([]byte("weight.1=1"), "n"); err == nil {
		t.Error("weight.1 accepted")
	}
}

// files is a ReadFile over a map.
func files(m map[string]string) ReadFile {
	return func(name string) ([]byte, error) {
		s, ok := m[name]
		if !ok {
			return nil, fmt.Errorf("open %s: %w", name, fs.ErrNotExist)
		}
		return []byte(s), nil
	}
}

// TestLoad checks which file wins on a start, by ZooKeeper 3.8's rules
// (QuorumPeerConfig.parse).
func TestLoad(t *testing.T) {
	const static = "dataDir=/d\nclientPort=2181\ninitLimit=5\nsyncLimit=2\n"
	three := "server.1=a:1:2\nserver.2=b:1:2\nserver.3=c:1:2\n"
	tests := []struct {
		name  string
		files map[string]string
		want  string // ConfigData, or the error
		next  int64  // NextEnsemble's version, -1 for none
	}{
		{"servers in the static file", map[string]string{"/z/zoo.cfg": static + three},
			"server.1=a:1:2:participant\nserver.2=b:1:2:participant\nserver.3=c:1:2:participant\nversion=0", -1},
		{"static version line", map[string]string{"/z/zoo.cfg": static + three + "version=100000000\n"},
			"version=100000000", -1},
		{"dynamic files beside a static file with servers are not read", map[string]string{
			"/z/zoo.cfg": static + three, "/z/zoo.cfg.dynamic.100000000": "server.9=x:1:2\n",
			"/z/zoo.cfg.dynamic.next": "garbage", "/z/zoo.cfg.bak": "x"},
			"server.1=a:1:2:participant\nserver.2=b:1:2:participant\nserver.3=c:1:2:participant\nversion=0", -1},
		{"dynamicConfigFile wins", map[string]string{
			"/z/zoo.cfg":                   static + "dynamicConfigFile=/z/zoo.cfg.dynamic.100000000\n",
			"/z/zoo.cfg.dynamic.100000000": "server.1=a:1:2:participant\nserver.2=b:1:2:participant\nserver.4=d:1:2:participant",
			"/z/zoo.cfg.dynamic.0":         three, "/z/zoo.cfg.bak": static + three},
			"server.1=a:1:2:participant\nserver.2=b:1:2:participant\nserver.4=d:1:2:participant\nversion=100000000", -1},
		{"static version ignored with a dynamic file", map[string]string{
			"/z/zoo.cfg": static + "version=7\ndynamicConfigFile=/z/dyn\n",
			"/z/dyn":     three},
			"version=0", -1},
		{"next file", map[string]string{
			"/z/zoo.cfg":                   static + "dynamicConfigFile=/z/zoo.cfg.dynamic.100000000\n",
			"/z/zoo.cfg.dynamic.100000000": three,
			"/z/zoo.cfg.dynamic.next":      three + "server.4=d:1:2\nversion=100000005"},
			"version=100000000", 0x100000005},
		{"bad next file", map[string]string{
			"/z/zoo.cfg":              static + "dynamicConfigFile=/z/dyn.1\n",
			"/z/dyn.1":                three,
			"/z/zoo.cfg.dynamic.next": "server.4=d:1\n"},
			"zoo.cfg.dynamic.next:1: server.4", -1},
		{"missing dynamic file", map[string]string{"/z/zoo.cfg": static + "dynamicConfigFile=/z/gone\n"},
			"dynamicConfigFile: open /z/gone: file does not exist", -1},
		{"server line in both", map[string]string{"/z/zoo.cfg": static + three + "dynamicConfigFile=/z/dyn\n", "/z/dyn": three},
			"must be in the dynamic configuration file", -1},
		{"reconfigEnabled=true, servers in the static file", map[string]string{"/z/zoo.cfg": static + three + "reconfigEnabled=true\n"},
			"server.1=a:1:2:participant\nserver.2=b:1:2:participant\nserver.3=c:1:2:participant\nversion=0", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := Load("/z/zoo.cfg", files(tt.files))
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				c.MyID = 1
				if verr := c.Validate(); verr != nil {
					got = verr.Error()
				} else {
					got = string(c.ConfigData())
				}
			}
			if !strings.Contains(got, tt.want) {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
			if err != nil {
				return
			}
			switch {
			case tt.next < 0 && c.NextEnsemble != nil:
				t.Errorf("NextEnsemble = %+v, want none", c.NextEnsemble)
			case tt.next >= 0 && (c.NextEnsemble == nil || c.NextEnsemble.Version != tt.next):
				t.Errorf("NextEnsemble = %+v, want version %#x", c.NextEnsemble, tt.next)
			}
		})
	}
	if _, _, err := Load("/z/zoo.cfg", files(nil)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing static file: %v", err)
	}
}

// TestConfigData compares with the bytes Apache ZooKeeper 3.8.0 stored in
// /zookeeper/config for these zoo.cfg files (QuorumPeerMain, myid 2).
func TestConfigData(t *testing.T) {
	tests := []struct {
		name, cfg, want string
	}{
		{"standalone", "dataDir=/d\nclientPort=2181\n", ""},
		{"one server, standalone", "dataDir=/d\nclientPort=2181\nserver.2=127.0.0.1:2888:3888\n", ""},
		{"one server, standaloneEnabled=false",
			"tickTime=200\ninitLimit=10\nsyncLimit=5\ndataDir=/d\nclientPort=31526\nadmin.enableServer=false\n4lw.commands.whitelist=*\n" +
				"standaloneEnabled=false\nserver.2=127.0.0.1:31527:31528\n",
			"server.2=127.0.0.1:31527:31528:participant\nversion=0"},
		{"ids in hash order, observer, client addresses",
			"tickTime=200\ninitLimit=10\nsyncLimit=5\ndataDir=/d\nadmin.enableServer=false\n" +
				"server.33=localhost:32897:32898;32896\nserver.17=localhost:32737:32738;32736\n" +
				"server.2=localhost:32587:32588;32586\nserver.100=localhost:33567:33568:observer;33566\n",
			"server.33=localhost:32897:32898:participant;0.0.0.0:32896\nserver.17=localhost:32737:32738:participant;0.0.0.0:32736\n" +
				"server.2=localhost:32587:32588:participant;0.0.0.0:32586\nserver.100=localhost:33567:33568:observer;0.0.0.0:33566\nversion=0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := Parse(strings.NewReader(tt.cfg))
			if err != nil {
				t.Fatal(err)
			}
			c.MyID = 2
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := string(c.ConfigData()); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
