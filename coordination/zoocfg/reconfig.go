package zoocfg

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Errors of Reconfigure, named by the reply ZooKeeper 3.8's leader gives
// (docs/zookeeper-protocol.md §2.4, reconfig).
var (
	// ErrReconfigArguments is BadArguments: a server spec that does not
	// parse, lacks its client address or reuses another server's
	// address, a replacement that names no server or a hierarchical
	// quorum, or a configuration left without enough voters.
	ErrReconfigArguments = errors.New("zoocfg: bad reconfiguration")
	// ErrReconfigMarshalling is MarshallingError: a server id, in
	// leavingServers or in a joining server's key, that is not a number,
	// or a replacement parseDynamicConfig refuses with an
	// IllegalArgumentException (ZooKeeper's leader lets those escape its
	// checks and answers them as a request it could not read).
	ErrReconfigMarshalling = errors.New("zoocfg: reconfiguration with an id that is not a number")
)

// Reconfig is the membership change of a reconfig request (op 16).
type Reconfig struct {
	// Joining lists server specs ("server.5=host:2888:3888;2181"),
	// comma-separated; Leaving lists server ids, comma-separated. Either
	// may be empty.
	Joining, Leaving string
	// NewMembers, when Replace is set (the request's newMembers was not
	// null), is the whole new membership: server specs separated by
	// commas or newlines. Joining and Leaving are then ignored.
	NewMembers string
	Replace    bool
}

// Reconfigure returns the configuration r makes of e, which must be the
// last configuration seen (ZooKeeper's lastSeenQuorumVerifier), with the
// given version (the zxid of the reconfig txn), as ZooKeeper 3.8's
// leader builds it:
//
//   - a replacement is read like a dynamic configuration file whose lines
//     are the specs;
//   - an incremental change first drops the leaving ids (an id not in e is
//     no error), then adds each joining server in turn, replacing one with
//     the same id; a joining server needs a client address, and none of
//     its addresses may equal one of another server's;
//   - the result needs two voters with standaloneEnabled (the default),
//     one without.
//
// Lists are split on commas, each item trimmed, empty items skipped, as
// ZooKeeper's StringUtils.split does. The servers are listed (Data) in the
// order ZooKeeper's HashMap gives them.
func (e *Ensemble) Reconfigure(r Reconfig, version int64, standaloneEnabled bool) (*Ensemble, error) {
	var next *Ensemble
	var err error
	if r.Replace {
		next, err = replaceMembers(r.NewMembers, standaloneEnabled)
	} else {
		next, err = e.changeMembers(r.Joining, r.Leaving)
	}
	if err != nil {
		return nil, err
	}
	next.Version = version
	voters := 0
	for _, s := range next.Servers {
		if s.Role == Participant {
			voters++
		}
	}
	switch {
	case standaloneEnabled && voters < 2:
		return nil, fmt.Errorf("%w: the new configuration must include at least 2 voters, has %d", ErrReconfigArguments, voters)
	case voters < 1:
		return nil, fmt.Errorf("%w: the new configuration has no voter", ErrReconfigArguments)
	}
	return next, nil
}

// replaceMembers reads a non-incremental membership as ZooKeeper's
// parseDynamicConfig does: server.N entries and a version (which the
// reconfig's zxid then replaces); any other key is BadArguments, and so
// are group and weight (hierarchical quorums, which keeper refuses, where
// ZooKeeper would take them). parseDynamicConfig's own checks throw an
// IllegalArgumentException, which ZooKeeper's leader answers as
// MarshallingError: no voter but observers, no voter without
// standaloneEnabled, one voter and observers with it.
func replaceMembers(members string, standaloneEnabled bool) (*Ensemble, error) {
	text := strings.ReplaceAll(members, ",", "\n")
	props, err := readDynamic([]byte(text), "newMembers")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReconfigArguments, err)
	}
	for _, p := range props {
		if _, ok := cutServerKey(p.key); !ok && p.key != "version" {
			return nil, fmt.Errorf("%w: newMembers: unrecognised parameter %s", ErrReconfigArguments, p.key)
		}
	}
	next, err := ensembleFrom(props, "newMembers")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReconfigArguments, err)
	}
	voters, observers := 0, 0
	for _, s := range next.Servers {
		if s.Role == Participant {
			voters++
		} else {
			observers++
		}
	}
	switch {
	case voters == 0 && (observers > 0 || !standaloneEnabled),
		voters == 1 && standaloneEnabled && observers > 0:
		return nil, fmt.Errorf("%w: newMembers with %d voters and %d observers", ErrReconfigMarshalling, voters, observers)
	}
	return next, nil
}

// changeMembers applies an incremental change to e.
func (e *Ensemble) changeMembers(joining, leaving string) (*Ensemble, error) {
	servers := map[int64]Server{}
	for _, s := range e.Servers {
		servers[s.ID] = s
	}
	order := slices.Clone(e.ordered())
	ids := make([]int64, 0, len(order))
	for _, s := range order {
		ids = append(ids, s.ID)
	}
	for _, item := range javaSplit(leaving, ",") {
		id, err := strconv.ParseInt(item, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: leaving server %q", ErrReconfigMarshalling, item)
		}
		delete(servers, id)
		ids = slices.DeleteFunc(ids, func(x int64) bool { return x == id })
	}
	for _, spec := range javaSplit(joining, ",") {
		s, err := parseJoining(spec)
		if err != nil {
			return nil, err
		}
		for _, other := range servers {
			if other.ID != s.ID && sharesAddress(s, other) {
				return nil, fmt.Errorf("%w: server %d reuses an address of server %d", ErrReconfigArguments, s.ID, other.ID)
			}
		}
		// ZooKeeper removes and puts again: a replaced server moves to the
		// end of the insertion order.
		ids = slices.DeleteFunc(ids, func(x int64) bool { return x == s.ID })
		ids = append(ids, s.ID)
		servers[s.ID] = s
	}
	next := &Ensemble{Order: hashMapOrder(ids)}
	for _, s := range servers {
		next.Servers = append(next.Servers, s)
	}
	slices.SortFunc(next.Servers, func(a, b Server) int { return cmp.Compare(a.ID, b.ID) })
	return next, nil
}

// parseJoining reads one joining server: "server.N=spec" (or "N=spec").
func parseJoining(item string) (Server, error) {
	parts := javaSplit(item, "=")
	if len(parts) != 2 {
		return Server{}, fmt.Errorf("%w: %q is not server.N=spec", ErrReconfigArguments, item)
	}
	key := parts[0]
	n, err := strconv.ParseInt(key[strings.LastIndexByte(key, '.')+1:], 10, 64)
	if err != nil {
		return Server{}, fmt.Errorf("%w: joining server %q", ErrReconfigMarshalling, key)
	}
	if n <= 0 {
		return Server{}, fmt.Errorf("%w: server id %d must be positive", ErrReconfigArguments, n)
	}
	s, err := parseServer(n, parts[1])
	if err != nil {
		return Server{}, fmt.Errorf("%w: server.%d=%s: %w", ErrReconfigArguments, n, parts[1], err)
	}
	if s.ClientPort == 0 {
		return Server{}, fmt.Errorf("%w: server.%d needs a client address (host:port:port;clientPort)", ErrReconfigArguments, n)
	}
	return s, nil
}

// sharesAddress reports whether a and b have an address in common: the
// quorum, election and client addresses of one against those of the
// other, compared as host text and port.
func sharesAddress(a, b Server) bool {
	addrs := func(s Server) []string {
		out := []string{
			javaHostString(s.Host) + ":" + strconv.Itoa(s.QuorumPort),
			javaHostString(s.Host) + ":" + strconv.Itoa(s.ElectionPort),
		}
		if s.ClientPort != 0 {
			out = append(out, javaHostString(s.ClientHost)+":"+strconv.Itoa(s.ClientPort))
		}
		return out
	}
	theirs := addrs(b)
	for _, x := range addrs(a) {
		if slices.Contains(theirs, x) {
			return true
		}
	}
	return false
}

// javaSplit splits s on sep, trims each item and drops empty ones, as
// ZooKeeper's StringUtils.split does (String.trim: characters up to ' ').
func javaSplit(s, sep string) []string {
	var out []string
	for _, item := range strings.Split(s, sep) {
		if item = strings.TrimFunc(item, func(r rune) bool { return r <= ' ' }); item != "" {
			out = append(out, item)
		}
	}
	return out
}
