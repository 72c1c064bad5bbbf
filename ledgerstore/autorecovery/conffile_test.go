package autorecovery

import (
	"slices"
	"strings"
	"testing"
	"time"

	"keeper/ledgerstore/ledger"
)

func TestFromProperties(t *testing.T) {
	for _, tc := range []struct {
		name    string
		props   map[string]string
		enabled bool
		check   func(Config) bool
		err     string
	}{
		{"defaults", map[string]string{}, false, func(c Config) bool {
			c = c.withDefaults()
			return c.LostBookieRecoveryDelay == 0 && c.AuditorPeriodicCheckInterval == 7*24*time.Hour &&
				c.AuditorPeriodicBookieCheckInterval == 24*time.Hour && c.OpenLedgerRereplicationGracePeriod == 30*time.Second &&
				c.RereplicateBackoff == 5*time.Second && c.EntryBatchSize == 100
		}, ""},
		{"all set", map[string]string{"autoRecoveryDaemonEnabled": "true", "lostBookieRecoveryDelay": "60",
			"auditorPeriodicCheckInterval": "0", "auditorPeriodicBookieCheckInterval": "3600",
			"openLedgerRereplicationGracePeriod": "1500", "rwRereplicateBackoffMs": "250",
			"rereplicationEntryBatchSize": "10", "auditorReplicasCheckInterval": "0"}, true, func(c Config) bool {
			c = c.withDefaults()
			return c.LostBookieRecoveryDelay == time.Minute && c.AuditorPeriodicCheckInterval == 0 &&
				c.AuditorPeriodicBookieCheckInterval == time.Hour && c.OpenLedgerRereplicationGracePeriod == 1500*time.Millisecond &&
				c.RereplicateBackoff == 250*time.Millisecond && c.EntryBatchSize == 10
		}, ""},
		{"bad bool", map[string]string{"autoRecoveryDaemonEnabled": "yes"}, false, nil, "autoRecoveryDaemonEnabled"},
		{"negative delay", map[string]string{"lostBookieRecoveryDelay": "-1"}, false, nil, "lostBookieRecoveryDelay"},
		{"batch zero", map[string]string{"rereplicationEntryBatchSize": "0"}, false, nil, "rereplicationEntryBatchSize"},
		{"replicas check on", map[string]string{"auditorReplicasCheckInterval": "600"}, false, nil, "auditorReplicasCheckInterval"},
		{"typo", map[string]string{"autoRecoveryDaemonEnable": "true"}, false, nil, "did you mean autoRecoveryDaemonEnabled"},
		{"case typo", map[string]string{"lostbookierecoverydelay": "5"}, false, nil, "did you mean lostBookieRecoveryDelay"},
		{"verification percentage", map[string]string{"auditorLedgerVerificationPercentage": "50"}, false, nil,
			"auditorLedgerVerificationPercentage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enabled, cfg, used, err := FromProperties(tc.props)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil || enabled != tc.enabled || !tc.check(cfg) {
				t.Fatalf("FromProperties = %v, %+v, %v", enabled, cfg, err)
			}
			for k := range tc.props {
				if !slices.Contains(used, k) {
					t.Errorf("key %s not reported as used", k)
				}
			}
		})
	}
}

// TestFromPropertiesPlacement checks that the placement keys of a
// bookkeeper.conf reach the replication worker's policy, and that a
// policy keeper does not run stops the start.
func TestFromPropertiesPlacement(t *testing.T) {
	_, cfg, used, err := FromProperties(map[string]string{
		"ensemblePlacementPolicy":          "org.apache.bookkeeper.client.RegionAwareEnsemblePlacementPolicy",
		"enforceMinNumRacksPerWriteQuorum": "true",
		"reppDnsResolverClass":             "org.apache.pulsar.bookie.rackawareness.BookieRackAffinityMapping",
	})
	if err != nil || cfg.Placement.Kind != ledger.RegionAware || !cfg.Placement.EnforceMinNumRacksPerWriteQuorum ||
		cfg.RackInfoPath != "/bookies" || !slices.Contains(used, "ensemblePlacementPolicy") {
		t.Fatalf("FromProperties = %+v, %v, %v", cfg, used, err)
	}
	if _, _, _, err := FromProperties(map[string]string{"ensemblePlacementPolicy": "com.example.Mine"}); err == nil ||
		!strings.Contains(err.Error(), "ensemblePlacementPolicy") {
		t.Fatalf("an unknown policy class: %v", err)
	}
	_, cfg, _, err = FromProperties(map[string]string{"auditorPeriodicPlacementPolicyCheckInterval": "600",
		"repairedPlacementPolicyNotAdheringBookieEnabled": "false"})
	if err != nil || cfg.AuditorPeriodicPlacementPolicyCheckInterval != 10*time.Minute {
		t.Fatalf("placement check interval: %+v, %v", cfg, err)
	}
	if _, _, _, err := FromProperties(map[string]string{"repairedPlacementPolicyNotAdheringBookieEnabled": "true"}); err == nil ||
		!strings.Contains(err.Error(), "repairedPlacementPolicyNotAdheringBookieEnabled") {
		t.Fatalf("repairing placement: %v", err)
	}
	if _, _, _, err := FromProperties(map[string]string{"minNumRackPerWriteQuorum": "3"}); err == nil ||
		!strings.Contains(err.Error(), "did you mean minNumRacksPerWriteQuorum") {
		t.Fatalf("a misspelt placement key: %v", err)
	}
}
