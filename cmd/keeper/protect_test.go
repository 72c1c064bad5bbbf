package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefuseUnsupportedProtection checks that `keeper server`, `keeper
// bookie` and `keeper shell` refuse to start on a setting that protects data
// or access keeper does not implement, from the configuration file or from
// the environment ZooKeeper's and BookKeeper's scripts pass to java, and
// that the error names the setting (and the file where there is one).
func TestRefuseUnsupportedProtection(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	zooCfg := "dataDir=" + filepath.Join(dir, "data") + "\nclientPort=0\nadmin.enableServer=false\n"
	plainZoo := write("zoo.cfg", zooCfg)
	krbZoo := write("krb-zoo.cfg", zooCfg+"kerberos.canonicalizeHostNames=true\n")
	aclZoo := write("acl-zoo.cfg", zooCfg+"zookeeper.skipACL=yes\n")
	// Neither file is enough to start on (no client port, no journal): a
	// check that let a setting through would fail, not serve.
	bkConf := "bookiePort=0\n"
	plainBookie := write("bookkeeper.conf", bkConf)
	tlsBookie := write("tls-bookkeeper.conf", bkConf+"tlsKeyStoreAlias=bk\n")

	tests := []struct {
		name string
		env  map[string]string
		args []string
		want []string // substrings of the error
	}{
		{"zoo.cfg kerberos", nil, []string{"server", krbZoo},
			[]string{krbZoo, "zoo.cfg:4: kerberos.canonicalizeHostNames: keeper does not support Kerberos yet"}},
		{"zoo.cfg skipACL", nil, []string{"server", aclZoo},
			[]string{aclZoo, "zoo.cfg:4: zookeeper.skipACL: keeper does not support skipping ACL checks yet"}},
		{"server quorum kerberos", map[string]string{"SERVER_JVMFLAGS": "-Xmx1g -Dzookeeper.quorum.auth.kerberos.servicePrincipal=zkquorum/localhost"},
			[]string{"server", plainZoo},
			[]string{"SERVER_JVMFLAGS: zookeeper.quorum.auth.kerberos.servicePrincipal: keeper reads its settings only from zoo.cfg; set it there"}},
		{"server quorum sasl in flags", map[string]string{"SERVER_JVMFLAGS": "-Dzookeeper.quorum.auth.enableSasl=true"},
			[]string{"server", plainZoo},
			[]string{"SERVER_JVMFLAGS: zookeeper.quorum.auth.enableSasl: keeper reads its settings only from zoo.cfg; set it there"}},
		{"server sasl provider", map[string]string{"JVMFLAGS": "-Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider"},
			[]string{"server", plainZoo},
			[]string{"JVMFLAGS: zookeeper.authProvider.1: keeper reads its settings only from zoo.cfg; set it there"}},
		{"server setting in flags", map[string]string{"SERVER_JVMFLAGS": "-Djute.maxbuffer=4194304"},
			[]string{"server", plainZoo},
			[]string{"SERVER_JVMFLAGS: jute.maxbuffer: keeper reads its settings only from zoo.cfg"}},
		{"datadir autocreate", map[string]string{"ZOO_DATADIR_AUTOCREATE_DISABLE": "1"},
			[]string{"server", plainZoo},
			[]string{"ZOO_DATADIR_AUTOCREATE_DISABLE: keeper does not support refusing to create a missing data directory yet"}},
		{"bookkeeper.conf tls", nil, []string{"bookie", tlsBookie},
			[]string{tlsBookie, "bookkeeper.conf:2: tlsKeyStoreAlias: keeper does not support TLS setting tlsKeyStoreAlias yet"}},
		// keeper's clients implement TLS and SASL DIGEST-MD5 (docs/tls.md,
		// docs/sasl.md); what they still lack stops them.
		{"bookie metadata client ocsp", map[string]string{"BOOKIE_EXTRA_OPTS": "-Dzookeeper.client.secure=true -Dzookeeper.ssl.ocsp=true"},
			[]string{"bookie", plainBookie},
			[]string{"BOOKIE_EXTRA_OPTS: zookeeper.ssl.ocsp: keeper does not support certificate revocation checking (OCSP) yet"}},
		{"shell client kerberos", map[string]string{"CLIENT_JVMFLAGS": "-Dzookeeper.kinit=/usr/bin/kinit"},
			[]string{"shell", "--server", "127.0.0.1:1", "ls", "/"},
			[]string{"CLIENT_JVMFLAGS: zookeeper.kinit: keeper does not support Kerberos yet"}},
		{"shell tls over nio", map[string]string{"JVMFLAGS": "-Dzookeeper.client.secure=true -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNIO"},
			[]string{"shell", "--server", "127.0.0.1:1", "ls", "/"},
			[]string{"the NIO socket speaks no TLS"}},
	}
	vars := []string{"SERVER_JVMFLAGS", "JVMFLAGS", "CLIENT_JVMFLAGS", "BOOKIE_EXTRA_OPTS", "ZOO_DATADIR_AUTOCREATE_DISABLE"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range vars {
				t.Setenv(v, tt.env[v])
			}
			_, err := runKeeper(t, context.Background(), tt.args...)
			if err == nil {
				t.Fatalf("keeper %v started", tt.args)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}
