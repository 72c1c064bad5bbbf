// Package admintls runs the admin HTTP server over TLS on keeper and on
// Apache ZooKeeper 3.8 with the same zoo.cfg keys and the same PKCS12
// store files (admin.forceHttps, admin.portUnification, the ssl.quorum.*
// stores; docs/tls.md, "The admin server"), and expects the same answers
// from each: HTTPS served with the Strict-Transport-Security header,
// plaintext served only with port unification. ZooKeeper 3.8 has no
// admin.needClientAuth (3.9 added it); coordination/admin's tests cover
// it on keeper alone.
//
// The package has tests only.
package admintls
