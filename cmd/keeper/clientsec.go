package main

import (
	"fmt"
	"os"

	"keeper/coordination/zkclient"
	"keeper/coordination/zoocfg"
)

// maxClientConfBytes bounds a client configuration file read into memory:
// real ones are a few lines.
const maxClientConfBytes = 1 << 20

// loadClientSecurity reads what keeper's ZooKeeper client should do about
// TLS and SASL, as the tool's Java counterpart reads it: the -D flags of
// the environment variables vars (CLIENT_JVMFLAGS and JVMFLAGS for the
// shell, BOOKIE_EXTRA_OPTS for a bookie), then the client configuration
// file conf when set (zkCli's -client-configuration: the same keys in a
// properties file), which wins. Stores and the JAAS file are read now, so
// a setting keeper cannot honour, or a file it cannot read, stops the
// command before it connects (docs/tls.md, docs/sasl.md).
func loadClientSecurity(getenv func(string) string, conf string, vars ...string) (zkclient.Security, error) {
	props := zoocfg.ClientEnvProperties(getenv, vars...)
	if conf != "" {
		fi, err := os.Stat(conf)
		if err != nil {
			return zkclient.Security{}, fmt.Errorf("client configuration: %w", err)
		}
		if fi.Size() > maxClientConfBytes {
			return zkclient.Security{}, fmt.Errorf("client configuration %s: larger than %d bytes", conf, maxClientConfBytes)
		}
		data, err := os.ReadFile(conf)
		if err != nil {
			return zkclient.Security{}, fmt.Errorf("client configuration: %w", err)
		}
		fileProps, err := zoocfg.ParseClientProperties(conf, data)
		if err != nil {
			return zkclient.Security{}, err
		}
		props = append(props, fileProps...)
	}
	cs, err := zoocfg.ParseClientSecurity(props)
	if err != nil {
		return zkclient.Security{}, err
	}
	return zkclient.NewSecurity(cs)
}

// metadataSecurity is the TLS and SASL of the ledger store's metadata
// sessions (a bookie's, autorecovery's, keeper ledger's): the ZooKeeper
// client properties in BOOKIE_EXTRA_OPTS, where BookKeeper's scripts pass
// them to its ZooKeeper client.
func metadataSecurity() (zkclient.Security, error) {
	return loadClientSecurity(os.Getenv, "", bookieExtraOptsEnv)
}
