package metadata

import (
	"net"
	"strconv"
	"testing"
)

// FuzzParseLayoutData feeds arbitrary LAYOUT znode contents to the
// parser: what it accepts must be a layout Init would accept on that tree.
func FuzzParseLayoutData(f *testing.F) {
	f.Add(LayoutHierarchical.LayoutData())
	f.Add(LayoutLongHierarchical.LayoutData())
	f.Add([]byte("1\nhierarchical:1"))
	f.Add([]byte("1\nflat:1"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseLayoutData(data)
		if err != nil {
			return
		}
		if !l.valid() || l.checkLayoutData(data) != nil {
			t.Fatalf("ParseLayoutData(%q) = %v, which does not accept the data", data, l)
		}
	})
}

// FuzzRegistrationData checks that ServiceAddress reads back the address
// RegistrationData writes, whatever the host and port.
func FuzzRegistrationData(f *testing.F) {
	f.Add("10.0.0.7", uint16(3181), "10.0.0.7", uint16(8000))
	f.Add("::1", uint16(1), "", uint16(0))
	f.Add("bk.example", uint16(65535), "bk.example", uint16(80))
	f.Fuzz(func(t *testing.T, host string, port uint16, httpHost string, httpPort uint16) {
		rpc := net.JoinHostPort(host, strconv.Itoa(int(port)))
		http := ""
		if httpHost != "" {
			http = net.JoinHostPort(httpHost, strconv.Itoa(int(httpPort)))
		}
		data, err := RegistrationData(rpc, http)
		if err != nil {
			return
		}
		got, err := ServiceAddress("b:1", data)
		if err != nil || got != rpc {
			t.Fatalf("ServiceAddress(RegistrationData(%q, %q)) = %q, %v", rpc, http, got, err)
		}
	})
}
