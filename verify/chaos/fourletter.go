package chaos

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// FourLetter sends a four-letter word to addr and reads the reply.
func FourLetter(addr, word string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, fourLetterTimeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(fourLetterTimeout))
	if _, err := io.WriteString(c, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// Srvr is what the srvr four-letter word reports.
type Srvr struct {
	Mode string // leader, follower, observer; "" when not serving
	Zxid int64
}

// ParseSrvr reads the Mode and Zxid lines of a srvr reply. A server that
// is not serving answers a sentence instead, which gives an empty Mode.
func ParseSrvr(reply string) (Srvr, error) {
	var s Srvr
	for _, line := range strings.Split(reply, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		switch k {
		case "Mode":
			s.Mode = strings.TrimSpace(v)
		case "Zxid":
			z, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(v), "0x"), 16, 64)
			if err != nil {
				return s, fmt.Errorf("chaos: srvr: bad zxid %q", v)
			}
			s.Zxid = int64(z)
		}
	}
	return s, nil
}

// Hash is one line of the hash four-letter word: a zxid and the tree
// digest there.
type Hash struct {
	Zxid   int64
	Digest int64
}

// ParseHash reads a hash reply, "<zxid hex>: <digest>" per line, and
// returns the last line's pair.
func ParseHash(reply string) (Hash, error) {
	var h Hash
	found := false
	for _, line := range strings.Split(strings.TrimSpace(reply), "\n") {
		zs, ds, ok := strings.Cut(line, ": ")
		if !ok {
			return Hash{}, fmt.Errorf("chaos: hash: bad line %q", line)
		}
		z, err := strconv.ParseUint(zs, 16, 64)
		if err != nil {
			return Hash{}, fmt.Errorf("chaos: hash: bad zxid %q", zs)
		}
		d, err := strconv.ParseInt(strings.TrimSpace(ds), 10, 64)
		if err != nil {
			return Hash{}, fmt.Errorf("chaos: hash: bad digest %q", ds)
		}
		h, found = Hash{Zxid: int64(z), Digest: d}, true
	}
	if !found {
		return Hash{}, fmt.Errorf("chaos: hash: empty reply")
	}
	return h, nil
}

// ParseMntr reads a mntr reply into its keys (without "zk_") and values.
func ParseMntr(reply string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(reply, "\n") {
		k, v, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		out[strings.TrimPrefix(k, "zk_")] = strings.TrimSpace(v)
	}
	return out
}

// Srvr asks s for srvr.
func (s *Server) Srvr() (Srvr, error) {
	reply, err := FourLetter(s.Addr, "srvr")
	if err != nil {
		return Srvr{}, err
	}
	return ParseSrvr(reply)
}

// Hash asks s for its current zxid and digest.
func (s *Server) Hash() (Hash, error) {
	reply, err := FourLetter(s.Addr, "hash")
	if err != nil {
		return Hash{}, err
	}
	return ParseHash(reply)
}

// Mntr asks s for mntr.
func (s *Server) Mntr() (map[string]string, error) {
	reply, err := FourLetter(s.Addr, "mntr")
	if err != nil {
		return nil, err
	}
	return ParseMntr(reply), nil
}

// modes asks every running, unpaused server for srvr and describes the
// result.
func (c *Cluster) modes() (map[int]Srvr, string) {
	out := map[int]Srvr{}
	var desc []string
	for _, s := range c.Servers {
		p := s.Proc()
		switch {
		case p == nil || !p.Running():
			desc = append(desc, s.Name+":down")
			continue
		case p.Paused():
			desc = append(desc, s.Name+":paused")
			continue
		}
		st, err := s.Srvr()
		if err != nil {
			desc = append(desc, fmt.Sprintf("%s:%v", s.Name, err))
			continue
		}
		out[s.ID] = st
		mode := st.Mode
		if mode == "" {
			mode = "not-serving"
		}
		desc = append(desc, fmt.Sprintf("%s:%s@%#x", s.Name, mode, st.Zxid))
	}
	return out, strings.Join(desc, " ")
}

// Leader returns the server that reports itself leader now, or nil. With
// a stale leader still in office there may be two; it returns the one
// with the highest zxid.
func (c *Cluster) Leader() *Server {
	got, _ := c.modes()
	var best *Server
	for _, s := range c.Servers {
		if st, ok := got[s.ID]; ok && st.Mode == "leader" {
			if best == nil || st.Zxid > got[best.ID].Zxid {
				best = s
			}
		}
	}
	return best
}

// WaitServing waits until every running, unpaused server serves, exactly
// one as leader, and returns the leader.
func (c *Cluster) WaitServing(timeout time.Duration) (*Server, error) {
	var leader *Server
	err := poll(timeout, "every running server serving under one leader", func() (bool, string, error) {
		got, desc := c.modes()
		leader = nil
		leaders := 0
		for _, s := range c.Servers {
			p := s.Proc()
			if p == nil || !p.Running() || p.Paused() {
				continue
			}
			st, ok := got[s.ID]
			switch {
			case !ok:
				return false, desc, nil
			case st.Mode == "leader":
				leaders++
				leader = s
			case st.Mode != "follower" && st.Mode != "observer":
				return false, desc, nil
			}
		}
		return leaders == 1, desc, nil
	})
	return leader, err
}

// WaitConverged waits until every running server reports the same zxid
// and digest, and returns them. Nothing may be writing meanwhile.
func (c *Cluster) WaitConverged(timeout time.Duration) (Hash, error) {
	var agreed Hash
	err := poll(timeout, "every running server at the same zxid and digest", func() (bool, string, error) {
		var desc []string
		same, first := true, true
		for _, s := range c.Running() {
			h, err := s.Hash()
			if err != nil {
				desc = append(desc, fmt.Sprintf("%s:%v", s.Name, err))
				same = false
				continue
			}
			desc = append(desc, fmt.Sprintf("%s:%#x/%d", s.Name, h.Zxid, h.Digest))
			if first {
				agreed, first = h, false
			} else if h != agreed {
				same = false
			}
		}
		return same && !first, strings.Join(desc, " "), nil
	})
	return agreed, err
}
