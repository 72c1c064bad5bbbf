package autorecovery

import (
	"fmt"
	"keeper/internal/typo"
	"keeper/ledgerstore/ledgerclient"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Keys of a BookKeeper server configuration (bookkeeper.conf) that
// autorecovery reads, as BookKeeper's ServerConfiguration spells them.
const (
	keyDaemonEnabled       = "autoRecoveryDaemonEnabled"
	keyLostBookieDelay     = "lostBookieRecoveryDelay"
	keyPeriodicCheck       = "auditorPeriodicCheckInterval"
	keyPeriodicBookieCheck = "auditorPeriodicBookieCheckInterval"
	keyOpenLedgerGrace     = "openLedgerRereplicationGracePeriod"
	keyBackoff             = "rwRereplicateBackoffMs"
	keyEntryBatch          = "rereplicationEntryBatchSize"
	keyPlacementCheck      = "auditorPeriodicPlacementPolicyCheckInterval"
	keyRepairPlacement     = "repairedPlacementPolicyNotAdheringBookieEnabled"
)

// refusedKeys are autorecovery checks keeper does not run. Each one,
// turned on, would protect data (find copies a bookie silently lost);
// accepting it and not checking would
// promise what does not happen, so a non-zero value is refused.
var refusedKeys = map[string]string{
	"auditorReplicasCheckInterval":        "the auditor's replicas check",
	"auditorLedgerVerificationPercentage": "verifying a percentage of every fragment's entries",
}

// FromProperties reads the autorecovery keys of a bookkeeper.conf: whether
// a bookie runs the daemon (autoRecoveryDaemonEnabled) and the daemon's
// settings, with BookKeeper's units (seconds for the delay and the check
// intervals, milliseconds for the grace period and the backoff). It
// returns the keys it used, so that the caller does not report them as
// ignored. An invalid value, or a check keeper does not run turned on, is
// an error naming its key. Store, ID and the rest are the caller's.
func FromProperties(props map[string]string) (enabled bool, cfg Config, used []string, err error) {
	cfg.AuditorPeriodicCheckInterval = -1
	cfg.AuditorPeriodicBookieCheckInterval = -1
	get := func(key string) (string, bool) {
		v, ok := props[key]
		if ok {
			used = append(used, key)
		}
		return strings.TrimSpace(v), ok
	}
	num := func(key string, min, max int64) (int64, bool, error) {
		v, ok := get(key)
		if !ok {
			return 0, false, nil
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || n < min || n > max {
			return 0, false, fmt.Errorf("bookkeeper.conf: %s: %q is not a whole number from %d to %d", key, v, min, max)
		}
		return n, true, nil
	}
	if v, ok := get(keyDaemonEnabled); ok {
		switch strings.ToLower(v) {
		case "true":
			enabled = true
		case "false", "":
		default:
			return false, Config{}, nil, fmt.Errorf("bookkeeper.conf: %s: %q is not true or false", keyDaemonEnabled, v)
		}
	}
	for _, s := range []struct {
		key      string
		unit     time.Duration
		min, max int64
		dst      *time.Duration
	}{
		{keyLostBookieDelay, time.Second, 0, 1<<31 - 1, &cfg.LostBookieRecoveryDelay},
		{keyPeriodicCheck, time.Second, 0, 1 << 40, &cfg.AuditorPeriodicCheckInterval},
		{keyPeriodicBookieCheck, time.Second, 0, 1 << 40, &cfg.AuditorPeriodicBookieCheckInterval},
		{keyOpenLedgerGrace, time.Millisecond, 0, 1 << 40, &cfg.OpenLedgerRereplicationGracePeriod},
		{keyBackoff, time.Millisecond, 0, 1 << 40, &cfg.RereplicateBackoff},
		{keyPlacementCheck, time.Second, 0, 1 << 40, &cfg.AuditorPeriodicPlacementPolicyCheckInterval},
	} {
		n, ok, err := num(s.key, s.min, s.max)
		if err != nil {
			return false, Config{}, nil, err
		}
		if ok {
			*s.dst = time.Duration(n) * s.unit
		}
	}
	n, ok, err := num(keyEntryBatch, 1, maxEntryBatchSize)
	if err != nil {
		return false, Config{}, nil, err
	}
	if ok {
		cfg.EntryBatchSize = int(n)
	}
	if err := refuseTypo(props); err != nil {
		return false, Config{}, nil, err
	}
	placement, pused, err := ledgerclient.PlacementFromProperties(props)
	if err != nil {
		return false, Config{}, nil, err
	}
	used = append(used, pused...)
	cfg.Placement, cfg.RackInfoPath = placement.Policy, placement.RackInfoPath
	if v, ok := get(keyRepairPlacement); ok {
		switch strings.ToLower(v) {
		case "false", "":
		case "true":
			return false, Config{}, nil, fmt.Errorf("bookkeeper.conf: %s=true asks the auditor to re-place ledgers "+
				"that do not adhere to the placement policy, which keeper does not do yet", keyRepairPlacement)
		default:
			return false, Config{}, nil, fmt.Errorf("bookkeeper.conf: %s: %q is not true or false", keyRepairPlacement, v)
		}
	}
	for key, what := range refusedKeys {
		if v, ok := get(key); ok && v != "" && v != "0" {
			return false, Config{}, nil, fmt.Errorf("bookkeeper.conf: %s=%s asks for %s, which keeper does not run yet",
				key, v, what)
		}
	}
	return enabled, cfg, used, nil
}

// Keys returns every bookkeeper.conf key FromProperties reads.
func Keys() []string {
	keys := []string{keyDaemonEnabled, keyLostBookieDelay, keyPeriodicCheck, keyPeriodicBookieCheck, keyOpenLedgerGrace,
		keyBackoff, keyEntryBatch, keyPlacementCheck, keyRepairPlacement}
	keys = append(keys, ledgerclient.PlacementKeys()...)
	for k := range refusedKeys {
		keys = append(keys, k)
	}
	return keys
}

// refuseTypo refuses a key one edit away from an autorecovery key that is not
// set: BookKeeper ignores unknown keys, so "autoRecoveryDaemonEnable=true"
// would leave the bookie without its daemon and nobody told.
func refuseTypo(props map[string]string) error {
	keys := Keys()
	slices.Sort(keys)
	var set []string
	for k := range props {
		set = append(set, k)
	}
	slices.Sort(set)
	for _, k := range set {
		if slices.Contains(keys, k) {
			continue
		}
		for _, known := range keys {
			if _, ok := props[known]; !ok && typo.OneEditApart(k, known) {
				return fmt.Errorf("bookkeeper.conf: unknown key %s; did you mean %s?", k, known)
			}
		}
	}
	return nil
}
