//go:build chaos

package main

import (
	"fmt"
	"os"
	"strings"

	"keeper/coordination/server"
)

// peerListenEnv names the quorum and election addresses
// ("host:port,host:port") a chaos build listens on instead of its own
// server line's: the harness stands proxies at the configured addresses,
// which every member's configuration text shares, and forwards to these.
const peerListenEnv = "KEEPER_PEER_LISTEN"

// overridePeerListen applies KEEPER_PEER_LISTEN to a member's quorum
// configuration; a reconfiguration then leaves the listeners alone.
func overridePeerListen(q *server.QuorumConfig) error {
	v := os.Getenv(peerListenEnv)
	if v == "" || q == nil {
		return nil
	}
	quorum, election, ok := strings.Cut(v, ",")
	if !ok || quorum == "" || election == "" {
		return fmt.Errorf("%s=%q: want quorum,election addresses", peerListenEnv, v)
	}
	q.ListenQuorum, q.ListenElection, q.FixedListen = quorum, election, true
	return nil
}
