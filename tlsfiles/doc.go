// Package tlsfiles is strata's TLS configuration from PEM files, the way
// Kafka configures SSL with ssl.keystore.type=PEM: a certificate chain and
// its private key (one keystore file, or two files), and a CA bundle that
// peers' certificates must chain to. A server reads its files again when
// they change, so a renewed certificate is served without a restart.
// Standard library only.
//
// # Usage
//
//	auth, err := tlsfiles.ParseClientAuth(sslClientAuth) // none, requested, required
//	srv, err := tlsfiles.NewServer(tlsfiles.Files{
//		CertFile: "/etc/strata/keystore.pem", // key and chain in one file,
//		KeyFile:  "/etc/strata/keystore.pem", // as ssl.keystore.location
//		CAFile:   "/etc/strata/ca.pem",       // ssl.truststore.location
//	}, auth, func(err error) { log.Warn("TLS reload", "error", err) })
//	ln = tls.NewListener(ln, srv.Config())
//	...
//	principal := tlsfiles.Principal(conn.ConnectionState()) // "User:CN=alice,OU=eng,O=acme"
//
//	cfg, err := tlsfiles.Client(tlsfiles.Files{CAFile: "/etc/strata/ca.pem"}, "") // a client
//
// # Files
//
// Every file is PEM. A certificate file holds CERTIFICATE blocks, the leaf
// first and then any intermediates; other blocks are skipped, so a Kafka
// PEM keystore (a PRIVATE KEY block and the chain, in either order) serves
// as both CertFile and KeyFile. A key file holds exactly one private key,
// unencrypted: "PRIVATE KEY" (PKCS#8, what Kafka's PEM keystore takes),
// "RSA PRIVATE KEY" (PKCS#1) or "EC PRIVATE KEY" (SEC 1). An encrypted key
// ("ENCRYPTED PRIVATE KEY", or a Proc-Type: 4,ENCRYPTED header) is refused:
// strata reads no ssl.key.password, and the error names the openssl
// command that writes the key unencrypted. A CA file holds one or more
// CERTIFICATE blocks. A JKS or PKCS#12 keystore is refused as not PEM,
// with the commands that convert it.
//
// Loading checks that the key is the first certificate's and that the
// certificate has not expired; every error names the file and what is
// wrong, and wraps one of the sentinels in errors.go.
//
// # Reloading
//
// A Server keeps the material of its last successful load: the
// certificate, and the CA pool. At most once per check interval (a
// second), the handshake that finds the check due reads the files again
// (comparing their bytes, not their times, so a same-second replacement
// is seen) and, if they changed, loads them. Handshakes already under way
// and connections already open keep what they started with; the next
// handshake uses the new material. A load that fails (a file missing
// mid-rename, a key not yet replaced to match a new certificate, a broken
// file) keeps the previous material, is reported through the onError
// callback once per distinct failure and through Err, and is retried at
// the next check, so replacing the certificate and the key one after the
// other converges; replacing a keystore file by a rename is atomic.
//
// # Client authentication
//
// ClientAuth is ssl.client.auth. requested and required verify a client
// certificate that is given against the CA file, so a connection either
// has a verified certificate (ConnectionState.VerifiedChains) or none:
// required refuses a client without one, requested admits it as
// User:ANONYMOUS. Principal is Kafka's default principal of the verified
// certificate (ssl.principal.mapping.rules=DEFAULT), printed byte for byte
// as Kafka's Java prints it.
//
// Every configuration, server and client, refuses TLS 1.0 and 1.1.
//
// Package tlsfiles/tlstest writes a CA and server and client certificates
// for tests.
package tlsfiles
