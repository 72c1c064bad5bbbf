package zkcore

import (
	"keeper/coordination/acl"
	"keeper/coordination/zkproto"
)

// AuthenticateX509 gives connection id the identities of a verified TLS
// client certificate whose subject is dn (acl.Authenticator.X509IDs:
// x509:<dn>, and super:<dn> for the x509 super user), as ZooKeeper's x509
// provider does when the TLS handshake completes, before the client's
// first request. It does nothing with the provider off: the driver then
// has no TLS port.
func (s *Server) AuthenticateX509(id ConnID, dn string) {
	c, ok := s.conns[id]
	if !ok {
		return
	}
	ids, err := s.auth.X509IDs(dn)
	if err != nil {
		return
	}
	c.ids = acl.AddIDs(c.ids, ids...)
}

// x509DN returns the subject of the connection's x509 identity, "" if it
// has none. An "addauth x509" re-checks the certificate the handshake
// verified, so it succeeds exactly when the connection has one, and adds
// nothing new.
func x509DN(ids []zkproto.ID) string {
	for _, id := range ids {
		if id.Scheme == acl.SchemeX509 {
			return id.ID
		}
	}
	return ""
}

// authenticate runs the provider of an auth packet's scheme.
func (s *Server) authenticate(c *conn, p *zkproto.AuthPacket) ([]zkproto.ID, error) {
	if p.Scheme == acl.SchemeX509 {
		return s.auth.X509IDs(x509DN(c.ids))
	}
	return s.auth.Authenticate(p.Scheme, p.Auth, c.remote.Addr().Unmap())
}
