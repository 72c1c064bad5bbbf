package zoocfg

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse. Rejecting them is fine;
// panicking is not, and neither is a config whose own methods panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(base))
	f.Add([]byte("tickTime=2000\ndataDir=/d\nclientPort=2181\nserver.1=[::1]:2888:3888;2181\n"))
	f.Add([]byte("dataDir=/d\nserver.2=h:2888:3888:observer;127.0.0.1:2181\nkey\\\n  continued = \\u00e9\\\r\n"))
	f.Add([]byte("dataDir /d\n4lw.commands.whitelist=*\nsnapCount=1\n#c\n!c\na\\=b:c"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 512 {
			// Enough for several lines of every kind. Larger inputs add no
			// coverage but make the fuzzer's minimization crawl.
			return
		}
		c, warnings, err := Parse(bytes.NewReader(data))
		if err != nil {
			if c != nil || warnings != nil {
				t.Fatalf("Parse returned a config or warnings with error %v", err)
			}
			return
		}
		_ = c.Validate()
		_ = c.ClientAddress()
		_ = c.Distributed()
		for _, s := range c.Servers {
			again, err := parseServer(s.ID, s.String())
			if err != nil || again != s {
				t.Fatalf("server %+v formats as %q, which parses to %+v, %v", s, s.String(), again, err)
			}
		}
	})
}

// FuzzParseMyID checks that ParseMyID never panics and only accepts
// positive ids.
func FuzzParseMyID(f *testing.F) {
	f.Add([]byte("1\n"))
	f.Add([]byte(" -7 "))
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := ParseMyID(data)
		if err == nil && id <= 0 {
			t.Fatalf("ParseMyID(%q) = %d", data, id)
		}
	})
}

// FuzzParseDynamic feeds arbitrary bytes and names to ParseDynamic and
// ParseNextDynamic. What they accept must format (Data) and parse back to
// the same servers.
func FuzzParseDynamic(f *testing.F) {
	f.Add([]byte("server.1=127.0.0.1:2888:3888:participant\nserver.2=[::1]:2889:3889:observer;2181\n"), "zoo.cfg.dynamic.100000000")
	f.Add([]byte("server.3=h:1:2;[::1]:3\n# c\nserver.1 = h:1:2\n"), "dyn")
	f.Add([]byte("server.1=h:1:2\nversion=5\n"), "zoo.cfg.dynamic.next")
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		if len(data) > 512 || len(name) > 64 {
			return
		}
		for _, parse := range []func([]byte, string) (*Ensemble, error){ParseDynamic, ParseNextDynamic} {
			e, err := parse(data, name)
			if err != nil {
				if e != nil {
					t.Fatalf("config with error %v", err)
				}
				continue
			}
			again, err := ParseNextDynamic(e.Data(), "again")
			if err != nil {
				t.Fatalf("Data() %q does not parse: %v", e.Data(), err)
			}
			if string(again.Data()) != string(e.Data()) && len(again.Servers) == len(e.Servers) {
				// The order may differ (the keys differ); the servers may not.
				for i := range e.Servers {
					if again.Servers[i] != e.Servers[i] || again.Version != e.Version {
						t.Fatalf("%+v formats as %q, which parses to %+v", e, e.Data(), again)
					}
				}
			} else if len(again.Servers) != len(e.Servers) {
				t.Fatalf("%+v formats as %q, which parses to %+v", e, e.Data(), again)
			}
		}
	})
}

// FuzzParseClientProperties feeds arbitrary client configuration files
// (zkCli's -client-configuration) to the client's property reader. It
// must never panic, and what it accepts must name the file in every
// property's source.
func FuzzParseClientProperties(f *testing.F) {
	f.Add([]byte("zookeeper.client.secure=true\nzookeeper.ssl.trustStore.location=/t.pem\n"))
	f.Add([]byte("java.security.auth.login.config==/etc/jaas.conf\nzookeeper.sasl.client = false\n"))
	f.Add([]byte("zookeeper.ssl.crl=true\\\n\n# c\n! d\nkey\\u0041=v"))
	f.Fuzz(func(t *testing.T, data []byte) {
		props, err := ParseClientProperties("client.conf", data)
		if err != nil {
			return
		}
		for _, p := range props {
			if !strings.HasPrefix(p.Source, "client.conf:") {
				t.Fatalf("property %q from %q", p.Name, p.Source)
			}
		}
		c, err := ParseClientSecurity(props)
		if err == nil && c.SASLSection == "" {
			t.Fatal("accepted an empty JAAS section name")
		}
	})
}
