// Package tlstest writes a throwaway public key infrastructure for tests:
// a CA, a server certificate for the hosts a test dials, and client
// certificates by common name, as PEM files in a directory, in the forms
// Kafka clients and strata read.
//
//	pki := tlstest.Write(t, t.TempDir(), "127.0.0.1", "localhost")
//	certFile, keyFile := pki.Client("alice") // principal User:CN=alice
//
// The files, for each kind of client:
//
//	strata (tlsfiles.Files)  CertFile: pki.ServerKeystore, KeyFile: pki.ServerKeystore, CAFile: pki.CAFile
//	                         or CertFile: pki.ServerCert, KeyFile: pki.ServerKey
//	Kafka (Java) broker      ssl.keystore.type=PEM, ssl.keystore.location=pki.ServerKeystore,
//	                         ssl.truststore.type=PEM, ssl.truststore.location=pki.CAFile
//	kcat / librdkafka        -X security.protocol=SSL -X ssl.ca.location=pki.CAFile
//	                         -X ssl.certificate.location=certFile -X ssl.key.location=keyFile
//	kafkajs (Node tls)       ssl: { ca: [read(pki.CAFile)], cert: read(certFile), key: read(keyFile) }
//	franz-go, sarama         tlsfiles.Client(tlsfiles.Files{CAFile: pki.CAFile, CertFile: certFile, KeyFile: keyFile}, "")
//	                         into kgo.DialTLSConfig, or sarama's Net.TLS.Config with Net.TLS.Enable
//
// Every key is ECDSA P-256, unencrypted, in PKCS#8 ("PRIVATE KEY", which
// Kafka's PEM keystore requires and every client above reads), written
// 0600. Certificates are valid from an hour ago (for clock skew) for a
// week. The server certificate names its hosts as DNS names and IP
// addresses (a host that parses as an IP is an IP SAN) and is good for
// both server and client authentication, as a broker's keystore is when
// brokers connect to each other; a client certificate is good for client
// authentication only, with the subject CN=cn. Each certificate file holds
// the leaf alone; the CA file holds the CA.
//
// Write, Client and Server report a failure (which takes a broken disk)
// with Fatal on the testing.TB given to Write, so call them from that test's
// goroutine. Client and Server may be called from several goroutines at
// once; each call writes new files and never overwrites one.
package tlstest
