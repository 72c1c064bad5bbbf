package ledgerclient

import (
	"testing"

	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// v2Config is testConfig speaking BookKeeper's v2 protocol to bookies.
func v2Config(cl *ledgertest.Cluster, seed uint64) Config {
	cfg := testConfig(cl, seed)
	cfg.UseV2WireProtocol = true
	return cfg
}

// TestV2 runs the client's end-to-end scenarios with useV2WireProtocol:
// write, close and read; a LAC read of an open ledger (piggybacked, as v2
// has no READ_LAC); recovery fencing a writer that is still adding, with
// either client on either protocol; and a tail (plain reads standing in
// for long polls).
func TestV2(t *testing.T) {
	cl := ledgertest.Start(t, 4)
	v2 := newClient(t, v2Config(cl, 21))
	t.Run("round trip", func(t *testing.T) {
		for _, opts := range []CreateOptions{
			{Ensemble: 3, WriteQuorum: 3, AckQuorum: 2, CustomMetadata: map[string][]byte{"app": []byte("3-3-2")}},
			{Ensemble: 4, WriteQuorum: 2, AckQuorum: 2, CustomMetadata: map[string][]byte{"app": []byte("4-2-2")}},
		} {
			opts.Password = testPassword
			roundTrip(t, v2, opts, 300)
		}
		v2.pool.mu.Lock()
		defer v2.pool.mu.Unlock()
		for b, bc := range v2.pool.conns {
			if cl := bc.cl.Load(); cl == nil || !cl.V2() {
				t.Fatalf("connection to %s is not v2", b)
			}
		}
	})
	t.Run("read open ledger", func(t *testing.T) {
		readOpenLedger(t, v2, newClient(t, v2Config(cl, 22)))
	})
	t.Run("recovery fences writer", func(t *testing.T) {
		recoveryFencesWriter(t, v2, newClient(t, v2Config(cl, 23)))
	})
	t.Run("v2 writer, v3 recovery", func(t *testing.T) {
		recoveryFencesWriter(t, v2, newClient(t, testConfig(cl, 24)))
	})
	t.Run("v3 writer, v2 recovery", func(t *testing.T) {
		recoveryFencesWriter(t, newClient(t, testConfig(cl, 25)), newClient(t, v2Config(cl, 26)))
	})
	t.Run("tail", func(t *testing.T) {
		tail(t, v2, newClient(t, v2Config(cl, 27)))
	})
}
