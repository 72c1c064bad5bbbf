// Package sasl checks keeper's SASL authentication of ZooKeeper clients
// (docs/sasl.md) with real clients, side by side with Apache ZooKeeper 3.8
// started from the same files (verify/compat/zkreal):
//
//   - kazoo's own SASL tests (test_sasl.py from python3-kazoo) run through
//     kazoo's test harness, once against ZooKeeper and once against keeper
//     through a java shim that starts "keeper server" where the harness
//     starts ZooKeeper;
//   - zkCli.sh with a JAAS Client section creates and reads a node with a
//     sasl ACL, with the right and with a wrong password;
//   - raw connections send good, wrong, garbled and cut-off DIGEST-MD5
//     exchanges, and both servers must answer them byte for byte alike
//     (but for the nonce) and close the same connections, while another
//     connection keeps being served;
//   - with Kerberos, an MIT KDC (Debian's krb5-kdc) in a temp dir and the
//     same keytabs for both servers: zkCli.sh and kazoo (pure-sasl over
//     pykerberos) with GSSAPI and sasl ACLs, raw first tokens (good,
//     replayed, for another principal, garbled), every branch of the
//     security-layer step (testdata/gssapi_layer.py), and a stale keytab.
//
// The package has tests only. Without Java, ZooKeeper, zkCli.sh, kazoo,
// pytest, pykerberos or the MIT KDC the tests skip, unless
// KEEPER_REQUIRE_ZK is set (make test sets it), in which case they fail.
package sasl
