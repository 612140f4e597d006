package tlsfiles

import "errors"

// Sentinel errors. Every error from this package wraps one of them with the
// file it is about and what to do, so test with errors.Is.
var (
	// ErrInvalidClientAuth: a client authentication setting that is not
	// none, requested or required.
	ErrInvalidClientAuth = errors.New("tlsfiles: invalid ssl.client.auth")

	// ErrMissingFile: a file the configuration needs was not named (a
	// server without its certificate, client certificates without a CA,
	// a certificate without its key).
	ErrMissingFile = errors.New("tlsfiles: missing file")

	// ErrNotPEM: a file holds no PEM block at all (a JKS or PKCS#12
	// keystore, or DER).
	ErrNotPEM = errors.New("tlsfiles: not a PEM file")

	// ErrNoCertificate: a certificate or CA file holds no CERTIFICATE
	// block, or one that does not parse.
	ErrNoCertificate = errors.New("tlsfiles: no usable certificate")

	// ErrNoPrivateKey: a key file holds no private key block, more than
	// one, or one that does not parse.
	ErrNoPrivateKey = errors.New("tlsfiles: no usable private key")

	// ErrEncryptedKey: the private key is encrypted. strata reads no key
	// password (ssl.key.password); the message names the openssl command
	// that writes the key unencrypted.
	ErrEncryptedKey = errors.New("tlsfiles: encrypted private key")

	// ErrKeyMismatch: the private key is not the key of the certificate.
	ErrKeyMismatch = errors.New("tlsfiles: private key does not match the certificate")

	// ErrExpired: the certificate's validity ended.
	ErrExpired = errors.New("tlsfiles: certificate expired")
)
