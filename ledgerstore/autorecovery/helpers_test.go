package autorecovery

import (
	"context"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/metadata"
)

// waitTimeout bounds every wait in these tests; a passing test never waits
// this long.
var waitTimeout = testhost.Scale(20 * time.Second)

// openStore opens a session of its own on addr and an initialized store.
func openStore(t *testing.T, addr string) (*metadata.Store, *metadata.Session) {
	t.Helper()
	ctx := testContext(t)
	sess, err := metadata.Dial(ctx, metadata.DialConfig{Servers: []string{addr},
		SessionTimeout: testhost.Scale(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	st, err := sess.NewStore(metadata.Config{RetryBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if err := st.Init(ctx); err != nil {
		t.Fatal(err)
	}
	return st, sess
}

// testContext returns a context that ends with the test or after
// waitTimeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}
