// Package sasl is the server side of the SASL mechanisms ZooKeeper clients
// authenticate with over sasl(102) (docs/sasl.md,
// docs/zookeeper-protocol.md §7.6): DIGEST-MD5, as Java's server
// implements RFC 2831 for ZooKeeper, and GSSAPI (RFC 4752; gssapi.go has
// the exchange), whose Kerberos side is coordination/kerberos.
//
// The package is pure: a mechanism is a state machine that takes the
// client's token and returns the server's, with no I/O; the nonces come
// from the Entropy reader the caller passes in.
//
// A DIGEST-MD5 exchange, as ZooKeeper's server and keeper run it:
//
//	client                                   server
//	sasl(102) token ""               ->
//	                                 <-      realm="zk-sasl-md5",nonce="<40 base64>",
//	                                         charset=utf-8,algorithm=md5-sess
//	sasl(102) charset=utf-8,username="bob",realm="zk-sasl-md5",nonce="...",
//	          nc=00000001,cnonce="...",digest-uri="zookeeper/zk-sasl-md5",
//	          maxbuf=65536,response=<32 hex>,qop=auth     ->
//	                                 <-      rspauth=<32 hex>      (complete)
//
// A failed exchange is an *Error. Most are failures (Java's SaslException:
// ZooKeeper answers AuthFailed and closes the connection); an abort is what
// Java's server meets as a runtime error (a maxbuf or nonce-count that is
// not a number), where ZooKeeper closes the connection without a reply.
package sasl

// Mechanism is the server side of one SASL exchange.
type Mechanism interface {
	// Evaluate takes the client's next token and returns the server's
	// reply token; an error is an *Error.
	Evaluate(token []byte) ([]byte, error)
	// Complete reports whether the client has authenticated.
	Complete() bool
	// AuthorizationID is the authorized id once Complete.
	AuthorizationID() string
	// Mechanism names the mechanism ("DIGEST-MD5", "GSSAPI").
	Mechanism() string
}

// Error is a failed exchange.
type Error struct {
	// Abort: ZooKeeper's server would meet this as a runtime error and
	// close the connection without a reply. Otherwise the exchange failed
	// and the client gets an error reply before the close.
	Abort bool
	// Reason says what was wrong, for the log. It never holds a password
	// and never a digest.
	Reason string
}

func (e *Error) Error() string { return e.Reason }
