package main

import (
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"

	"keeper/coordination/zoocfg"
)

// Members of one ensemble that run on the same host share its CPUs, but
// Go sizes each process for all of them: three members on two CPUs run
// six processors, and every hand-off between goroutines wakes an idle
// processor's thread that finds nothing to do. On two vCPUs one
// processor per member wrote one at a time faster, with a shorter tail
// and a quarter less CPU, and about as fast at 16 clients × 16 in flight
// (docs/configuration.md; the figures are in BENCHMARKS.md, "Members that
// share two vCPUs"). So a member whose zoo.cfg places others on its own host (loopback or
// one of this host's addresses, written as addresses or "localhost")
// divides Go's processors among them. GOMAXPROCS in the environment wins.

// processorShare is the processors a member runs with when onHost members
// (itself included) share cpus: at least 1.
func processorShare(cpus, onHost int) int {
	if onHost <= 1 {
		return cpus
	}
	return max(1, cpus/onHost)
}

// membersOnHost counts the servers whose host is this host by local:
// loopback and "localhost" always, other addresses as local says. Names
// other than localhost are not resolved (a start does not wait on DNS)
// and count as elsewhere.
func membersOnHost(servers []zoocfg.Server, local func(netip.Addr) bool) int {
	n := 0
	for _, s := range servers {
		if s.Host == "localhost" {
			n++
			continue
		}
		a, err := netip.ParseAddr(s.Host)
		if a = a.Unmap(); err == nil && (a.IsLoopback() || local(a)) {
			n++
		}
	}
	return n
}

// hostAddrs returns this host's interface addresses, as a set.
func hostAddrs() map[netip.Addr]bool {
	set := map[netip.Addr]bool{}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return set
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			set[p.Addr().Unmap()] = true
		}
	}
	return set
}

// processors guards the setting of a process that runs several servers
// (tests): the first to share sets it, and puts it back when it stops.
var processors struct {
	sync.Mutex
	held bool
}

// shareProcessors divides Go's processors among the members zoo.cfg puts
// on this host, unless the environment sets GOMAXPROCS or the server is
// alone on it; the returned func puts the previous setting back. lookup
// and set are os.LookupEnv and runtime.GOMAXPROCS but for tests.
func shareProcessors(zc *zoocfg.Config, logger *slog.Logger, lookup func(string) (string, bool),
	set func(int) int, local func(netip.Addr) bool) (restore func()) {
	if _, ok := lookup("GOMAXPROCS"); ok || !zc.Distributed() {
		return func() {}
	}
	onHost := membersOnHost(zc.Servers, local)
	cpus := set(0)
	n := processorShare(cpus, onHost)
	if n == cpus {
		return func() {}
	}
	processors.Lock()
	defer processors.Unlock()
	if processors.held {
		return func() {}
	}
	processors.held = true
	prev := set(n)
	logger.Info("members of this ensemble share this host's CPUs: running with fewer processors (GOMAXPROCS overrides)",
		"members_on_host", onHost, "cpus", cpus, "processors", n)
	return func() {
		processors.Lock()
		defer processors.Unlock()
		set(prev)
		processors.held = false
	}
}

// shareHostProcessors is shareProcessors with the process's environment,
// runtime and interfaces.
func shareHostProcessors(zc *zoocfg.Config, logger *slog.Logger) (restore func()) {
	addrs := sync.OnceValue(hostAddrs)
	return shareProcessors(zc, logger, os.LookupEnv, runtime.GOMAXPROCS, func(a netip.Addr) bool { return addrs()[a] })
}
