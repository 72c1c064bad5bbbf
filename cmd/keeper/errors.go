package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// keeperPackages are the names keeper's packages put before their error
// messages ("ledgerclient: metadata: read ledger 9: ..."): context for a
// developer, noise for an operator, so userError drops them.
var keeperPackages = []string{
	"acl", "admin", "bkproto", "bookie", "bookierpc", "clientconn", "datatree", "entrystore", "journal",
	"jute", "ledgerclient", "metadata", "peer", "quorumnet", "sandbox", "server", "session", "snap",
	"txn", "txnlog", "vfs", "watch", "zab", "zkclient", "zkcore", "zkproto", "zoocfg", "zxid",
}

// userError is the message main prints for err: its text without the
// package names keeper's packages prefix, and without a part repeated
// right after itself.
func userError(err error) string {
	parts := strings.Split(err.Error(), ": ")
	out := parts[:0]
	for _, p := range parts {
		if isPackageName(p) {
			continue
		}
		if len(out) > 0 && out[len(out)-1] == p {
			continue
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return err.Error()
	}
	return strings.Join(out, ": ")
}

func isPackageName(s string) bool {
	for _, p := range keeperPackages {
		if s == p {
			return true
		}
	}
	return false
}

// metadataProbeTimeout bounds how long a ledger command waits to reach a
// metadata server before it says it cannot: the ZooKeeper client itself
// would retry for its whole session timeout.
const metadataProbeTimeout = 3 * time.Second

// probeServers returns nil once one of servers accepts a TCP connection,
// or an error naming them and why none did.
func probeServers(servers []string, timeout time.Duration) error {
	var reasons []string
	for _, s := range servers {
		c, err := net.DialTimeout("tcp", s, timeout)
		if err == nil {
			c.Close()
			return nil
		}
		reasons = append(reasons, fmt.Sprintf("%s: %v", s, dialReason(err)))
	}
	return errors.New("cannot reach the metadata service (--zk): " + strings.Join(reasons, "; "))
}

// dialReason says why a dial failed without the Go package chain: the
// operating system's reason when there is one.
func dialReason(err error) error {
	var sys *os.SyscallError
	var op *net.OpError
	switch {
	case errors.As(err, &sys):
		return sys.Err
	case errors.As(err, &op) && op.Err != nil:
		return op.Err
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("no answer in time")
	}
	return err
}
