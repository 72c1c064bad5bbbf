package ledgerclient

import (
	"testing"

	"keeper/ledgerstore/bookie"
	"keeper/ledgerstore/bookietls"
	"keeper/ledgerstore/bookietls/bookietlstest"
	"keeper/ledgerstore/ledgerclient/ledgertest"
)

// TestTLS runs the client's end-to-end scenarios over START_TLS to
// bookies that require client certificates: write, close and read, in v3
// and v2, and recovery fencing a writer that is still adding. A client
// whose trust store does not vouch for the bookies cannot write: every
// bookie counts as unavailable.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca := bookietlstest.CA(t, dir, "ca")
	bk := bookietlstest.Issue(t, dir, "bookie", ca, bookietlstest.Options{})
	client := bookietlstest.Issue(t, dir, "client", ca, bookietlstest.Options{})
	cl := ledgertest.StartWith(t, 3, func(c *bookie.Config) { c.TLS = bookietlstest.Bookie(bk, ca, true) })
	tlsConfig := func(seed uint64, s bookietls.Settings) Config {
		cfg := testConfig(cl, seed)
		cfg.TLS = s
		return cfg
	}
	good := bookietlstest.Client(ca, client)
	t.Run("round trip", func(t *testing.T) {
		c := newClient(t, tlsConfig(31, good))
		roundTrip(t, c, CreateOptions{Ensemble: 3, WriteQuorum: 3, AckQuorum: 2,
			Password: testPassword, CustomMetadata: map[string][]byte{"app": []byte("tls")}}, 200)
		c.pool.mu.Lock()
		for b, bc := range c.pool.conns {
			if bcl := bc.cl.Load(); bcl == nil || !bcl.TLS() {
				t.Errorf("connection to %s is not over TLS", b)
			}
		}
		c.pool.mu.Unlock()
		v2 := tlsConfig(32, good)
		v2.UseV2WireProtocol = true
		roundTrip(t, newClient(t, v2), CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2,
			Password: testPassword, CustomMetadata: map[string][]byte{"app": []byte("tls v2")}}, 200)
	})
	t.Run("recovery fences writer", func(t *testing.T) {
		recoveryFencesWriter(t, newClient(t, tlsConfig(33, good)), newClient(t, tlsConfig(34, good)))
	})
	t.Run("untrusted client", func(t *testing.T) {
		other := bookietlstest.CA(t, t.TempDir(), "other")
		c := newClient(t, tlsConfig(35, bookietlstest.Client(other, client)))
		w, err := c.Create(testCtx(t), CreateOptions{Ensemble: 3, WriteQuorum: 3, AckQuorum: 2, Password: testPassword})
		if err != nil {
			return // refused before any add: fine too
		}
		if _, err := w.Append(testCtx(t), []byte("x")); err == nil {
			t.Fatal("an add through bookies the client cannot trust succeeded")
		}
	})
}

// TestTLSConfigRefused: a client whose TLS settings cannot be loaded is
// not created.
func TestTLSConfigRefused(t *testing.T) {
	cl := ledgertest.Start(t, 0)
	cfg := testConfig(cl, 1)
	cfg.TLS = bookietls.Settings{Enabled: true} // no trust store
	if c, err := New(cfg); err == nil {
		c.Close()
		t.Fatal("client created without a trust store")
	}
}
