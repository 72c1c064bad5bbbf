package zoocfg

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Role is a server's part in the ensemble.
type Role int

const (
	// Participant servers vote in elections and on proposals. It is the
	// default role.
	Participant Role = iota
	// Observer servers follow the leader without voting.
	Observer
)

// String returns the role as zoo.cfg spells it.
func (r Role) String() string {
	switch r {
	case Participant:
		return "participant"
	case Observer:
		return "observer"
	}
	return "Role(" + strconv.Itoa(int(r)) + ")"
}

// Server is one server.N entry:
//
//	server.N=host:quorumPort:electionPort[:participant|:observer][;[clientHost:]clientPort]
//
// A host may be an IPv6 address in brackets ([::1]); the brackets are not
// kept.
type Server struct {
	// ID is N, the server id that the server's myid file holds.
	ID int64
	// Host is the address peers reach this server at.
	Host string
	// QuorumPort is the port followers connect to the leader on.
	QuorumPort int
	// ElectionPort is the port leader election runs on.
	ElectionPort int
	// Role is Participant unless the entry says observer.
	Role Role
	// ClientHost is the client address from the part after ';'. It is
	// "0.0.0.0" when only a port is given and "" when there is no client
	// part.
	ClientHost string
	// ClientPort is the client port after ';', or 0 when absent.
	ClientPort int
}

// String formats s as the value of its server.N line.
func (s Server) String() string {
	out := joinHostPort(s.Host, s.QuorumPort) + ":" + strconv.Itoa(s.ElectionPort) + ":" + s.Role.String()
	if s.ClientPort != 0 {
		out += ";" + joinHostPort(s.ClientHost, s.ClientPort)
	}
	return out
}

// check checks the fields of one server on their own.
func (s Server) check() error {
	switch {
	case s.ID <= 0:
		return fmt.Errorf("id %d must be positive", s.ID)
	case s.Host == "":
		return errors.New("no host")
	case !validPort(s.QuorumPort) || !validPort(s.ElectionPort):
		return fmt.Errorf("ports %d:%d out of range 1-65535", s.QuorumPort, s.ElectionPort)
	case s.QuorumPort == s.ElectionPort:
		return fmt.Errorf("quorum and election ports must differ, both are %d", s.QuorumPort)
	case s.Role != Participant && s.Role != Observer:
		return fmt.Errorf("unknown role %v", s.Role)
	case s.ClientPort != 0 && !validPort(s.ClientPort):
		return fmt.Errorf("client port %d out of range 1-65535", s.ClientPort)
	}
	return nil
}

func validPort(p int) bool { return p >= 1 && p <= 65535 }

// parseServerID parses the N of a server.N key.
func parseServerID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errors.New("server id is not an integer")
	}
	if id <= 0 {
		return 0, errors.New("server id must be positive")
	}
	return id, nil
}

// parseServer parses the value of a server.N line.
func parseServer(id int64, value string) (Server, error) {
	s := Server{ID: id}
	quorumPart, clientPart, hasClient := strings.Cut(value, ";")
	if strings.Contains(clientPart, ";") {
		return Server{}, errors.New("more than one ';'")
	}
	if strings.Contains(quorumPart, "|") {
		return Server{}, errors.New("multiple addresses (a|b) are not supported")
	}
	parts, err := splitHostPort(quorumPart)
	if err != nil {
		return Server{}, err
	}
	if len(parts) < 3 || len(parts) > 4 {
		return Server{}, errors.New("want host:quorumPort:electionPort[:role]")
	}
	s.Host = parts[0]
	if s.QuorumPort, err = parsePort(parts[1]); err != nil {
		return Server{}, fmt.Errorf("quorum port: %w", err)
	}
	if s.ElectionPort, err = parsePort(parts[2]); err != nil {
		return Server{}, fmt.Errorf("election port: %w", err)
	}
	if len(parts) == 4 {
		if s.Role, err = parseRole(parts[3]); err != nil {
			return Server{}, err
		}
	}
	if hasClient {
		if s.ClientHost, s.ClientPort, err = parseClientAddress(clientPart); err != nil {
			return Server{}, err
		}
	}
	if s.QuorumPort == s.ElectionPort {
		return Server{}, fmt.Errorf("quorum and election ports must differ, both are %d", s.QuorumPort)
	}
	return s, nil
}

// parseClientAddress parses "[host:]port" after the ';'.
func parseClientAddress(v string) (string, int, error) {
	parts, err := splitHostPort(v)
	if err != nil {
		return "", 0, fmt.Errorf("client address: %w", err)
	}
	host := "0.0.0.0"
	switch len(parts) {
	case 1:
	case 2:
		host = parts[0]
	default:
		return "", 0, errors.New("client address: want [host:]port")
	}
	port, err := parsePort(parts[len(parts)-1])
	if err != nil {
		return "", 0, fmt.Errorf("client port: %w", err)
	}
	return host, port, nil
}

// splitHostPort splits on ':' like ZooKeeper's ConfigUtils.getHostAndPort,
// except that a leading [IPv6] host is one part without its brackets. Empty
// parts are errors.
func splitHostPort(s string) ([]string, error) {
	var parts []string
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return nil, errors.New("'[' without matching ']'")
		}
		parts = append(parts, s[1:end])
		s = s[end+1:]
		if s == "" {
			return parts, nil
		}
		if s[0] != ':' || len(s) == 1 {
			return nil, errors.New("want a port after ']:'")
		}
		s = s[1:]
	}
	parts = append(parts, strings.Split(s, ":")...)
	for _, p := range parts {
		if p == "" {
			return nil, errors.New("empty host or port")
		}
	}
	return parts, nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if !validPort(p) {
		return 0, fmt.Errorf("%d out of range 1-65535", p)
	}
	return p, nil
}

func parseRole(s string) (Role, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "participant":
		return Participant, nil
	case "observer":
		return Observer, nil
	}
	return 0, fmt.Errorf("unknown role %q (want participant or observer)", s)
}
