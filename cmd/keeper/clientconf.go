package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"keeper/ledgerstore/bookie"
	"keeper/ledgerstore/bookietls"
)

// clientConfFlag is --client-conf: a BookKeeper client configuration
// (bk_client.conf's format), of which keeper reads the TLS keys
// (docs/bookie-tls.md).
type clientConfFlag struct{ path string }

func (f *clientConfFlag) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.path, "client-conf", "",
		"a BookKeeper client configuration file; its TLS keys (tlsProviderFactoryClass, clientTrustStore, ...) secure the bookie connections")
}

// tls returns the TLS settings of the file, or none without one. Keys
// outside the TLS families are not keeper's to read here and are left
// alone; an unknown key of those families is refused.
func (f *clientConfFlag) tls() (bookietls.Settings, error) {
	if f.path == "" {
		return bookietls.Settings{}, nil
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return bookietls.Settings{}, err
	}
	props, err := bookie.ParseProperties(data)
	if err != nil {
		return bookietls.Settings{}, fmt.Errorf("%s: %w", f.path, err)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range props {
			if !yield(k) {
				return
			}
		}
	})
	if k, ok := bookietls.UnknownKey(keys); ok {
		return bookietls.Settings{}, fmt.Errorf("%s: %s: keeper does not support this TLS setting", f.path, k)
	}
	s, err := bookietls.Parse(bookietls.Client, func(key string) (string, bool) {
		v, ok := props[key]
		return strings.TrimSpace(v), ok
	})
	if err != nil {
		return bookietls.Settings{}, fmt.Errorf("%s: %w", f.path, err)
	}
	return s, nil
}
