package ledgerclient

import (
	"fmt"
	"strconv"
	"strings"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata"
)

// PlacementSettings are the client's placement settings as a BookKeeper
// configuration file gives them.
type PlacementSettings struct {
	Policy       ledger.PlacementPolicy
	RackInfoPath string // "" or metadata.DefaultRackInfoPath
}

// Keys of BookKeeper's client configuration that PlacementFromProperties
// reads, as ClientConfiguration and AbstractConfiguration spell them.
const (
	KeyEnsemblePlacementPolicy          = "ensemblePlacementPolicy"
	KeyMinNumRacksPerWriteQuorum        = "minNumRacksPerWriteQuorum"
	KeyEnforceMinNumRacksPerWriteQuorum = "enforceMinNumRacksPerWriteQuorum"
	KeyDNSResolverClass                 = "reppDnsResolverClass"
	KeyNetworkTopologyScript            = "networkTopologyScriptFileName"
	KeyEnforceMinNumFaultDomains        = "enforceMinNumFaultDomainsForWrite"
	KeyRegionsToWrite                   = "reppRegionsToWrite"
)

// Rack resolvers reppDnsResolverClass may name. BookKeeper's default runs
// a script (none set: every bookie in the default rack); Pulsar's read
// the /bookies znode.
const (
	scriptResolver       = "org.apache.bookkeeper.net.ScriptBasedMapping"
	pulsarResolver       = "org.apache.pulsar.bookie.rackawareness.BookieRackAffinityMapping"
	pulsarLegacyResolver = "org.apache.pulsar.zookeeper.ZkBookieRackAffinityMapping"
)

// PlacementKeys returns every key PlacementFromProperties reads.
func PlacementKeys() []string {
	return []string{KeyEnsemblePlacementPolicy, KeyMinNumRacksPerWriteQuorum, KeyEnforceMinNumRacksPerWriteQuorum,
		KeyDNSResolverClass, KeyNetworkTopologyScript, KeyEnforceMinNumFaultDomains, KeyRegionsToWrite}
}

// PlacementFromProperties reads the placement keys of a BookKeeper
// configuration (docs/bookkeeper-protocol.md §8.6) with BookKeeper's
// defaults: the rack-aware policy, two racks per write quorum, not
// enforced, the script resolver with no script. It fails closed: a policy
// or rack resolver class keeper does not run, a topology script, the
// region-aware durability settings (reppRegionsToWrite) and
// enforceMinNumFaultDomainsForWrite=true are errors naming their key,
// never replaced by something else. used lists the keys it read.
func PlacementFromProperties(props map[string]string) (s PlacementSettings, used []string, err error) {
	get := func(key string) (string, bool) {
		v, ok := props[key]
		if ok {
			used = append(used, key)
		}
		return strings.TrimSpace(v), ok
	}
	if v, ok := get(KeyEnsemblePlacementPolicy); ok && v != "" {
		if s.Policy.Kind, err = ledger.PolicyByClass(v); err != nil {
			return PlacementSettings{}, nil, fmt.Errorf("bookkeeper.conf: %s: %w", KeyEnsemblePlacementPolicy, err)
		}
	}
	if v, ok := get(KeyMinNumRacksPerWriteQuorum); ok && v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 || n > 1024 {
			return PlacementSettings{}, nil, fmt.Errorf("bookkeeper.conf: %s: %q is not a whole number from 1 to 1024",
				KeyMinNumRacksPerWriteQuorum, v)
		}
		s.Policy.MinNumRacksPerWriteQuorum = n
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{{KeyEnforceMinNumRacksPerWriteQuorum, &s.Policy.EnforceMinNumRacksPerWriteQuorum}, {KeyEnforceMinNumFaultDomains, nil}} {
		v, ok := get(b.key)
		if !ok {
			continue
		}
		var on bool
		switch strings.ToLower(v) {
		case "true":
			on = true
		case "false", "":
		default:
			return PlacementSettings{}, nil, fmt.Errorf("bookkeeper.conf: %s: %q is not true or false", b.key, v)
		}
		if b.dst != nil {
			*b.dst = on
		} else if on {
			return PlacementSettings{}, nil, fmt.Errorf("bookkeeper.conf: %s=true asks the client to withhold "+
				"acknowledgements until they span enough fault domains, which keeper does not do yet", b.key)
		}
	}
	if v, ok := get(KeyNetworkTopologyScript); ok && v != "" {
		return PlacementSettings{}, nil, fmt.Errorf("bookkeeper.conf: %s: keeper runs no topology script; "+
			"give the racks in Pulsar's /bookies znode (%s=%s) or as a static mapping", KeyNetworkTopologyScript,
			KeyDNSResolverClass, pulsarResolver)
	}
	if v, ok := get(KeyRegionsToWrite); ok && v != "" {
		return PlacementSettings{}, nil, fmt.Errorf("bookkeeper.conf: %s: keeper does not enforce region "+
			"durability (reppMinimumRegionsForDurability) yet", KeyRegionsToWrite)
	}
	if v, ok := get(KeyDNSResolverClass); ok && v != "" {
		switch v {
		case scriptResolver:
		case pulsarResolver, pulsarLegacyResolver:
			s.RackInfoPath = metadata.DefaultRackInfoPath
		default:
			return PlacementSettings{}, nil, fmt.Errorf("bookkeeper.conf: %s: rack resolver %q is not one keeper runs "+
				"(%s, or %s, which reads %s)", KeyDNSResolverClass, v, scriptResolver, pulsarResolver,
				metadata.DefaultRackInfoPath)
		}
	}
	return s, used, nil
}
