package server

import (
	"fmt"

	"keeper/zkserver"
)

// fourLetter runs a four-letter word (spec §8). ruok answers even when the
// word is not whitelisted, as Apache ZooKeeper does only when whitelisted;
// a word outside the whitelist gets the refusal text.
func (s *Server) fourLetter(cmd string, arg int64) []byte {
	if !s.allowed(cmd) {
		return []byte(cmd + " is not executed because it is not in the whitelist.\n")
	}
	switch cmd {
	case "ruok":
		return []byte("imok")
	case "srvr":
		var out []byte
		ok := s.Inspect(func(core *zkserver.Server) {
			st := core.Stats()
			out = fmt.Appendf(nil, "Zookeeper version: %s\nLatency min/avg/max: %d/%.4f/%d\nReceived: %d\nSent: %d\nConnections: %d\nOutstanding: %d\nZxid: 0x%x\nMode: standalone\nNode count: %d\n",
				Version, st.MinLatencyMs, st.AvgLatencyMs, st.MaxLatencyMs, st.PacketsReceived, st.PacketsSent,
				len(core.Conns()), core.OutstandingRequests(), int64(core.LastZxid()), core.Tree().NodeCount())
		})
		if !ok {
			return []byte("This ZooKeeper instance is not currently serving requests\n")
		}
		return out
	}
	return nil
}
