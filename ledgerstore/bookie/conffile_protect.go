package bookie

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"keeper/ledgerstore/bookietls"
)

// protection is a BookKeeper setting that protects data or access and
// that keeper's bookie does not implement.
type protection struct {
	feature string // what keeper lacks, for the error
	// refused reports whether value asks for the protection; the value
	// that asks for nothing (the feature off, or left empty as BookKeeper's
	// bk_server.conf leaves several) is accepted. ok is false for a value
	// that is neither.
	refused func(value string) (refused, ok bool)
}

const (
	tlsFeature     = "TLS"
	httpsFeature   = "HTTPS on the HTTP server"
	authFeature    = "authentication of bookie connections"
	zkACLFeature   = "ZooKeeper ACLs on the bookie's metadata (zkEnableSecurity)"
	integrityCheck = "data integrity checking"
)

// protections are the bookkeeper.conf keys keeper refuses, exactly as
// BookKeeper's ServerConfiguration and AbstractConfiguration spell them;
// protectedPrefixes covers the families. An entry here wins over a prefix.
var protections = map[string]protection{
	"httpServerTlsEnable":            {httpsFeature, whenTrue},
	"httpServerKeyStorePath":         {httpsFeature, whenSet},
	"httpServerKeyStorePassword":     {httpsFeature, whenSet},
	"httpServerTrustStorePath":       {httpsFeature, whenSet},
	"httpServerTrustStorePassword":   {httpsFeature, whenSet},
	"bookieAuthProviderFactoryClass": {authFeature, whenSet},
	"clientAuthProviderFactoryClass": {authFeature, whenSet},
	"authorizedRoles":                {"certificate role authorization", whenSet},
	// BookKeeper checks the user whenever the key is present, even empty.
	"permittedStartupUsers":            {"restricting which users may start the bookie", func(string) (bool, bool) { return true, true }},
	"zkEnableSecurity":                 {zkACLFeature, whenTrue},
	"dataIntegrityChecking":            {integrityCheck, whenTrue},
	"dataIntegrityStampMissingCookies": {integrityCheck, whenTrue},
	"localConsistencyCheckOnStartup":   {"the local consistency check at start", whenTrue},
}

// protectedPrefixes are the families of protective keys: a TLS key
// (tls*, clientKeyStore*, clientTrustStore*) that keeper does not read
// (bookietls.Keys lists those it reads) is refused when set.
var protectedPrefixes = []string{"tls", "clientKeyStore", "clientTrustStore"}

func protectionOf(key string) (protection, bool) {
	if p, ok := protections[key]; ok {
		return p, true
	}
	if slices.Contains(bookietls.Keys(bookietls.Client), key) {
		return protection{}, false
	}
	for _, prefix := range protectedPrefixes {
		if strings.HasPrefix(key, prefix) {
			return protection{tlsFeature + " setting " + key, whenSet}, true
		}
	}
	return protection{}, false
}

func whenSet(v string) (bool, bool) { return v != "", true }

// whenTrue refuses true; like the parser's other booleans it takes true or
// false in any case, and empty as unset.
func whenTrue(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "", "false":
		return false, true
	case "true":
		return true, true
	}
	return false, false
}

// refuseProtective fails on the first key, in sorted order, that asks for
// a protection of data or access keeper's bookie does not give yet, so that
// a bookkeeper.conf from a secured BookKeeper does not start a bookie that
// serves plaintext to anyone. A protective key with its off value is
// marked used: keeper does what it says.
func (p *confParser) refuseProtective() {
	keys := make([]string, 0, len(p.props))
	for k := range p.props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		prot, ok := protectionOf(k)
		if !ok {
			continue
		}
		v, _ := p.get(k)
		refused, valid := prot.refused(v)
		switch {
		case !valid:
			p.fail(k, v, "true or false")
		case refused && p.err == nil:
			p.err = &KeyError{Key: k, Reason: fmt.Sprintf("keeper does not support %s yet", prot.feature)}
		}
	}
}
