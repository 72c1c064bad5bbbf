package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"

	"keeper/coordination/clientconn"
	"keeper/coordination/clienttls"
)

// setupTLS loads ClientTLS's stores into Conn.TLS. A store that cannot be
// loaded fails New with an error naming the zoo.cfg key and the file.
func setupTLS(cfg *Config, logger *slog.Logger) error {
	if cfg.ClientTLS == nil {
		cfg.Conn.TLS = nil
		return nil
	}
	tc := *cfg.ClientTLS
	if tc.Logger == nil {
		tc.Logger = logger
	}
	srv, err := clienttls.New(tc)
	if err != nil {
		return fmt.Errorf("server: tls for clients: %w", err)
	}
	cfg.Conn.TLS = srv.TLSConfig()
	return nil
}

// listen opens the client listeners: the plaintext client address (which
// serves TLS clients too with PortUnification) and the TLS-only secure
// client address, each when configured. At least one must be.
func (s *Server) listen() error {
	if s.cfg.ClientAddr == "" && s.cfg.SecureClientAddr == "" {
		return errors.New("server: no client address")
	}
	if (s.cfg.SecureClientAddr != "" || s.cfg.PortUnification) && s.cfg.Conn.TLS == nil {
		return errors.New("server: a secure client address or port unification needs ClientTLS")
	}
	if s.cfg.ClientAddr != "" {
		ln, err := s.listenClients(s.cfg.ClientAddr)
		if err != nil {
			return fmt.Errorf("server: listen on %s: %w", s.cfg.ClientAddr, err)
		}
		s.ln = ln
		s.log.Info("serving clients", "addr", ln.Addr().String(), "tlsToo", s.cfg.PortUnification)
	}
	if s.cfg.SecureClientAddr != "" {
		ln, err := s.listenClients(s.cfg.SecureClientAddr)
		if err != nil {
			s.closeListeners()
			return fmt.Errorf("server: listen on %s: %w", s.cfg.SecureClientAddr, err)
		}
		s.secureLn = ln
		s.log.Info("serving tls clients", "addr", ln.Addr().String())
	}
	return nil
}

// startAccepting starts one accept goroutine per listener, each with the
// connection configuration of its port.
func (s *Server) startAccepting() {
	if ln := s.clientListener(); ln != nil {
		cfg := s.plainConnConfig()
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.accept(ln, cfg) }()
	}
	if s.secureLn != nil {
		cfg := s.cfg.Conn
		cfg.PlaintextToo = false
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.accept(s.secureLn, cfg) }()
	}
}

// plainConnConfig is the connection configuration of the plaintext
// client port (which takes TLS too with PortUnification).
func (s *Server) plainConnConfig() clientconn.Config {
	cfg := s.cfg.Conn
	if !s.cfg.PortUnification {
		cfg.TLS = nil
	}
	cfg.PlaintextToo = s.cfg.PortUnification
	return cfg
}

// closeListeners closes the listeners opened so far; a client address
// moved by a reconfiguration after this is not opened.
func (s *Server) closeListeners() error {
	var errs []error
	s.lnMu.Lock()
	s.lnClosed = true
	plain := s.ln
	s.lnMu.Unlock()
	for _, ln := range []net.Listener{plain, s.secureLn} {
		if ln != nil {
			errs = append(errs, ln.Close())
		}
	}
	return errors.Join(errs...)
}

// SecureAddr returns the address TLS clients connect to, nil without a
// secure client address.
func (s *Server) SecureAddr() net.Addr {
	if s.secureLn == nil {
		return nil
	}
	return s.secureLn.Addr()
}
