// Package clienttls builds the TLS side of the coordination server's client
// port from zoo.cfg's ssl.* keys, as Apache ZooKeeper 3.8's ClientX509Util
// reads them (docs/tls.md):
//
//   - the key store (ssl.keyStore.*) holds the server's private key and
//     certificate chain, the trust store (ssl.trustStore.*) the
//     certificates client certificates must chain to; each is a PEM, PKCS12
//     or JKS file, its type given by ssl.*.type or guessed from the file
//     name's extension (.pem, .p12, .jks) as ZooKeeper guesses it;
//   - ssl.clientAuth (none, want, need; need by default), ssl.protocol,
//     ssl.enabledProtocols and ssl.ciphersuites (Java's names, mapped to
//     Go's; a name Go cannot provide is refused by name);
//   - with client.certReload, a handshake that begins after either store
//     file changed gets a configuration loaded from the new files.
//
// It also formats a verified client certificate's subject the way Java's
// X500Principal.getName() does (RFC 2253), which is the id of the x509
// identity ZooKeeper's X509AuthenticationProvider gives the connection.
//
// A store that cannot be loaded (a missing file, a wrong password, a key
// store without a private key) is an error naming the zoo.cfg key and the
// file; no error or log line carries a password.
package clienttls
