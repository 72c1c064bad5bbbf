package server

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"keeper/coordination/clienttls"
	"keeper/coordination/zab"
	"keeper/coordination/zkcore"
	"keeper/coordination/zoocfg"
)

// TestConfigFromZooQuorumTLS checks how sslQuorum and portUnification
// decide how a member dials and what it accepts.
func TestConfigFromZooQuorumTLS(t *testing.T) {
	const stores = "ssl.quorum.keyStore.location=/k.p12\nssl.quorum.trustStore.location=/t.jks\n"
	tests := []struct {
		name, cfg string
		want      *QuorumTLS
	}{
		{"plaintext", "", nil},
		{"tls only", "sslQuorum=true\n" + stores, &QuorumTLS{Dial: true}},
		{"unified, tls dials", "sslQuorum=true\nportUnification=true\n" + stores, &QuorumTLS{Dial: true, AcceptPlaintext: true}},
		{"unified, plaintext dials", "portUnification=true\n" + stores, &QuorumTLS{AcceptPlaintext: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			zc, _, err := zoocfg.Parse(strings.NewReader("dataDir=/tmp/x\nclientPort=2181\ninitLimit=5\nsyncLimit=2\n" +
				"server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889\nsslQuorumReloadCertFiles=true\n" + tt.cfg))
			if err != nil {
				t.Fatal(err)
			}
			zc.MyID = 1
			got := ConfigFromZoo(zc, nil).Quorum.TLS
			if tt.want != nil {
				tt.want.Stores = clienttls.Config{Prefix: "ssl.quorum.", Reload: true,
					KeyStore: clienttls.Store{Location: "/k.p12"}, TrustStore: clienttls.Store{Location: "/t.jks"}}
				tt.want.HostnameVerification, tt.want.ReverseDNS = true, true
				tt.want.DetectionTimeout = zoocfg.DefaultHandshakeDetectionTimeout
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestQuorumTLSStoreRefusesStart: a member whose quorum key store does not
// load does not start, and says which key.
func TestQuorumTLSStoreRefusesStart(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.p12")
	cfg := Config{ClientAddr: "127.0.0.1:0", Storage: StorageConfig{DataDir: t.TempDir()},
		Quorum: &QuorumConfig{MyID: 1, Voters: []zab.PeerID{1, 2}, ListenQuorum: "127.0.0.1:0", ListenElection: "127.0.0.1:0",
			InitLimitTicks: 10, SyncLimitTicks: 5,
			TLS: &QuorumTLS{Stores: clienttls.Config{Prefix: "ssl.quorum.", KeyStore: clienttls.Store{Location: missing}}, Dial: true}}}
	cfg.Core = zkcore.DefaultConfig()
	cfg.Core.ServerID, cfg.Core.TickMs = 1, 100
	cfg.Core.MinSessionTimeoutMs, cfg.Core.MaxSessionTimeoutMs = 2000, 20000
	s, err := New(cfg)
	if err == nil {
		err = s.Start()
		if err == nil {
			s.Close()
		}
	}
	if err == nil || !strings.Contains(err.Error(), "ssl.quorum.keyStore.location") {
		t.Fatalf("start with a missing quorum key store: %v", err)
	}
}
