package server

import "keeper/coordination/zkcore"

// fourLetter answers a four-letter word asked on connection self (docs/zookeeper-protocol.md §8):
// the admin package owns the whitelist and every word's output.
func (s *Server) fourLetter(self zkcore.ConnID, cmd string, arg int64) []byte {
	return s.admin.FourLetter(cmd, self, arg)
}
