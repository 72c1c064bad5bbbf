// Package secmatrix runs one table of security settings against keeper
// and, side by side, against Apache ZooKeeper 3.8 started from the same
// files (the same zoo.cfg lines, JAAS file, key and trust stores, keytabs
// and krb5.conf), and expects the same outcome from both in every cell:
//
//   - on the client port, TLS off, ssl.clientAuth=want and need, each with
//     SASL none, DIGEST-MD5 and Kerberos (GSSAPI); cells with
//     sessionRequireClientSASLAuth; and cells with enforce.auth.enabled
//     and enforce.auth.schemes digest, x509, or both: a standalone server
//     of each kind, a setup session that creates nodes with sasl, x509 and
//     digest ACLs, and kazoo clients with and without a client
//     certificate, with no, right and wrong SASL credentials (for
//     Kerberos, another principal), and in the enforced digest cells with
//     addauth digest of the right password, a wrong one or none. What
//     each client gets (a session or none, AuthFailed, each node readable
//     or not, SessionClosedRequireAuth, and what the setup's creates
//     returned) must be the same on both servers;
//   - between servers, three-member ensembles of each kind with sslQuorum
//     (ssl.quorum.clientAuth need, and want) and quorum SASL DIGEST-MD5
//     or Kerberos, where two members are configured alike and the third
//     is not (no certificate, an untrusted one, a wrong password, no SASL
//     at all, a Kerberos principal of another host),
//     and a control cell where it is: whether the two form an ensemble
//     and whether the third joins must agree.
//
// One PKI (verify/compat/internal/pkitest) and one MIT KDC
// (verify/compat/internal/mitkdc) serve every cell. docs/tls.md and
// docs/sasl.md describe the settings. The package has tests only; without
// Java, ZooKeeper, kazoo, openssl, keytool or the MIT KDC the tests skip,
// unless KEEPER_REQUIRE_ZK is set (make test sets it), in which case they
// fail.
package secmatrix
