// Package metadatatest starts what the tests of the metadata store, and of
// the packages built on it, stand on: a standalone keeper coordination
// server in memory on a loopback port, stopped when the test ends. It does
// not import the metadata package, so that package's own tests can use it.
package metadatatest

import (
	"testing"

	"keeper/coordination/server"
	"keeper/coordination/zkcore"
)

// Keeper runs an in-memory keeper server with core's settings on a port
// the kernel picks (nothing restarts it on the same address), and closes
// it when t ends.
func Keeper(t testing.TB, core zkcore.Config) *server.Server {
	t.Helper()
	s, err := server.New(server.Config{ClientAddr: "127.0.0.1:0", Core: core})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// KeeperAddr runs Keeper with zkcore's defaults and returns its client
// address, host:port.
func KeeperAddr(t testing.TB) string {
	t.Helper()
	return Keeper(t, zkcore.DefaultConfig()).Addr().String()
}

// FastTicks is zkcore's default with a 50 ms tick and sessions from
// 100 ms: for tests that wait for a session to expire.
func FastTicks() zkcore.Config {
	core := zkcore.DefaultConfig()
	core.TickMs = 50
	core.MinSessionTimeoutMs = 100
	return core
}
