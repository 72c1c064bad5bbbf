package zoocfg

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseClientSecurity(t *testing.T) {
	tests := []struct {
		name  string
		flags string
		check func(c ClientSecurity) bool
		want  string // an error containing this; "" for none
	}{
		{"defaults", "-Xmx1g", func(c ClientSecurity) bool {
			return !c.Secure && c.HostnameVerification && c.SASL && c.SASLSection == "Client" && !c.SASLEnabled()
		}, ""},
		{"tls", "-Dzookeeper.client.secure=true -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty " +
			"-Dzookeeper.ssl.keyStore.location=/k.p12 -Dzookeeper.ssl.keyStore.password=pw -Dzookeeper.ssl.keyStore.type=PKCS12 " +
			"-Dzookeeper.ssl.trustStore.location=/t.jks -Dzookeeper.ssl.trustStore.password=tp " +
			"-Dzookeeper.ssl.hostnameVerification=false -Dzookeeper.ssl.enabledProtocols=TLSv1.2,TLSv1.3",
			func(c ClientSecurity) bool {
				return c.Secure && c.KeyStore == TLSStore{Location: "/k.p12", Password: "pw", Type: "PKCS12"} &&
					c.TrustStore == TLSStore{Location: "/t.jks", Password: "tp"} && !c.HostnameVerification &&
					slices.Equal(c.EnabledProtocols, []string{"TLSv1.2", "TLSv1.3"})
			}, ""},
		{"sasl", "-Djava.security.auth.login.config==/etc/jaas.conf -Dzookeeper.sasl.clientconfig=ZKClient",
			func(c ClientSecurity) bool {
				return c.SASLEnabled() && c.LoginConfig == "/etc/jaas.conf" && c.SASLSection == "ZKClient"
			}, ""},
		{"sasl off", "-Djava.security.auth.login.config=/etc/jaas.conf -Dzookeeper.sasl.client=false",
			func(c ClientSecurity) bool { return !c.SASLEnabled() }, ""},
		{"later wins", "-Dzookeeper.client.secure=true -Dzookeeper.client.secure=false",
			func(c ClientSecurity) bool { return !c.Secure }, ""},
		{"nio with tls", "-Dzookeeper.client.secure=true -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNIO",
			nil, "NIO socket speaks no TLS"},
		{"unknown socket", "-Dzookeeper.clientCnxnSocket=com.example.Socket", nil, "zookeeper.clientCnxnSocket"},
		{"bad bool", "-Dzookeeper.client.secure=yes", nil, "zookeeper.client.secure: invalid value"},
		{"crl", "-Dzookeeper.ssl.crl=true", nil, "zookeeper.ssl.crl: keeper does not support certificate revocation checking (CRL)"},
		{"unknown ssl key", "-Dzookeeper.ssl.keyManager=x", nil, "zookeeper.ssl.keyManager: keeper does not support"},
		{"context supplier", "-Dzookeeper.ssl.context.supplier.class=a.B", nil, "SSLContext supplier"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseClientSecurity(ClientEnvProperties(func(string) string { return tt.flags }, "CLIENT_JVMFLAGS"))
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("got %v, want an error containing %q", err, tt.want)
				}
				if strings.Contains(tt.want, "does not support") && !errors.Is(err, ErrUnsupported) {
					t.Fatalf("%v does not wrap ErrUnsupported", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Fatalf("unexpected %+v", c)
			}
		})
	}
}

func TestParseClientProperties(t *testing.T) {
	file, err := ParseClientProperties("client.properties", []byte("# zkCli -client-configuration\n"+
		"zookeeper.client.secure = true\nzookeeper.ssl.trustStore.location=/t.pem\n"))
	if err != nil {
		t.Fatal(err)
	}
	env := ClientEnvProperties(func(string) string { return "-Dzookeeper.client.secure=false" }, "CLIENT_JVMFLAGS")
	c, err := ParseClientSecurity(append(env, file...))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Secure || c.TrustStore.Location != "/t.pem" {
		t.Fatalf("the file did not win over the environment: %+v", c)
	}
	if _, err := ParseClientSecurity([]ClientProperty{{Source: "client.properties:3", Name: "zookeeper.ssl.ocsp", Value: "true"}}); err == nil ||
		!strings.HasPrefix(err.Error(), "client.properties:3: zookeeper.ssl.ocsp") {
		t.Fatalf("got %v, want the file's line named", err)
	}
}
