// Package tlscompat checks keeper's TLS client port (docs/tls.md) with
// clients nobody here wrote, and against Apache ZooKeeper 3.8 side by
// side:
//
//   - zkCli.sh over TLS (Netty client socket) with PKCS12 and with JKS
//     stores that openssl and keytool make in the test;
//   - go-zookeeper through a TLS dialer: x509 identities in ACLs, addauth
//     x509, the x509 super user;
//   - the same cells on keeper and on ZooKeeper with the same files:
//     ssl.clientAuth none, want and need, each with a client without a
//     certificate, with a trusted one, an untrusted one and an expired
//     one, and a plaintext client on the TLS port; both must agree;
//   - bad connections (plaintext on the TLS port, TLS on the plaintext
//     port, a handshake cut off, a client that never speaks TLS) refused
//     one by one while a healthy client is served, and certificate reload.
//
// The package has tests only.
package tlscompat
