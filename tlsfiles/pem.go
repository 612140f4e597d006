package tlsfiles

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
	"time"
)

// This file reads the PEM files: certificate chains, private keys and CA
// bundles, each refused with the file's name and what is wrong with it.

// readFile reads file, whose role ("certificate file", "key file", "CA
// file") the error names.
func readFile(role, file string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tlsfiles: reading the %s: %w", role, err)
	}
	return b, nil
}

// notPEM is the error for a file with no PEM block in it.
func notPEM(role, file string) error {
	return fmt.Errorf("%w: %s %s holds no PEM block; strata reads PEM files (ssl.keystore.type=PEM): "+
		"convert a PKCS#12 keystore with `openssl pkcs12 -in keystore.p12 -nodes -out keystore.pem`, "+
		"a JKS one to PKCS#12 first with `keytool -importkeystore -srckeystore keystore.jks -destkeystore keystore.p12 -deststoretype PKCS12`",
		ErrNotPEM, role, file)
}

// parseCertificates returns the CERTIFICATE blocks of data, read from
// file, in order; it skips other blocks (a keystore's private key).
func parseCertificates(role, file string, data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	var others []string
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			others = append(others, block.Type)
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %s %s: certificate %d does not parse: %v", ErrNoCertificate, role, file, len(certs)+1, err)
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		if len(others) == 0 {
			return nil, notPEM(role, file)
		}
		return nil, fmt.Errorf("%w: %s %s holds no CERTIFICATE block, only %s", ErrNoCertificate, role, file, strings.Join(others, ", "))
	}
	return certs, nil
}

// parsePrivateKey returns the one private key in data, read from file:
// PKCS#8 ("PRIVATE KEY"), PKCS#1 ("RSA PRIVATE KEY") or SEC 1 ("EC PRIVATE
// KEY"), unencrypted. It skips other blocks (a keystore's certificates, an
// "EC PARAMETERS" block).
func parsePrivateKey(file string, data []byte) (crypto.Signer, error) {
	var keys []*pem.Block
	var others []string
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		switch {
		case block.Type == "ENCRYPTED PRIVATE KEY", strings.HasSuffix(block.Type, "PRIVATE KEY") && strings.Contains(block.Headers["Proc-Type"], "ENCRYPTED"):
			return nil, fmt.Errorf("%w in %s: strata reads no key password (ssl.key.password); "+
				"write the key unencrypted with `openssl pkey -in %s -out key.pem` (for a keystore, append its certificates to key.pem) "+
				"and name that file, readable by strata's user only", ErrEncryptedKey, file, file)
		case block.Type == "PRIVATE KEY", strings.HasSuffix(block.Type, " PRIVATE KEY"):
			keys = append(keys, block)
		default:
			others = append(others, block.Type)
		}
	}
	switch {
	case len(keys) == 0 && len(others) == 0:
		return nil, notPEM("key file", file)
	case len(keys) == 0:
		return nil, fmt.Errorf("%w: key file %s holds no PRIVATE KEY block, only %s", ErrNoPrivateKey, file, strings.Join(others, ", "))
	case len(keys) > 1:
		return nil, fmt.Errorf("%w: key file %s holds %d private keys; keep the certificate's one", ErrNoPrivateKey, file, len(keys))
	}
	// The block's label is not trusted: tools write PKCS#8 under "RSA
	// PRIVATE KEY" and the other way round, so try each form as crypto/tls
	// does.
	der := keys[0].Bytes
	var key any
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		key = k
	} else if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		key = k
	} else if k, err := x509.ParseECPrivateKey(der); err == nil {
		key = k
	} else {
		return nil, fmt.Errorf("%w: key file %s: the %s block is not a PKCS#8, PKCS#1 or EC private key", ErrNoPrivateKey, file, keys[0].Type)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%w: key file %s: a %T cannot sign a TLS handshake", ErrNoPrivateKey, file, key)
	}
	return signer, nil
}

// keyPair is the certificate chain in certData (read from certFile) with
// the private key in keyData (read from keyFile): the key must be the
// first certificate's, and that certificate valid at now.
func keyPair(certFile string, certData []byte, keyFile string, keyData []byte, now time.Time) (tls.Certificate, error) {
	chain, err := parseCertificates("certificate file", certFile, certData)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := parsePrivateKey(keyFile, keyData)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf := chain[0]
	pub, ok := leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(key.Public()) {
		return tls.Certificate{}, fmt.Errorf("%w: the key in %s is not the key of the first certificate in %s (%s); the chain must start with the key's own certificate",
			ErrKeyMismatch, keyFile, certFile, describe(leaf))
	}
	if now.After(leaf.NotAfter) {
		return tls.Certificate{}, fmt.Errorf("%w: the certificate in %s (%s) expired at %s", ErrExpired, certFile, describe(leaf), leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	out := tls.Certificate{PrivateKey: key, Leaf: leaf}
	for _, c := range chain {
		out.Certificate = append(out.Certificate, c.Raw)
	}
	return out, nil
}

// readPool reads the CA certificates in file into a pool.
func readPool(file string) (*x509.CertPool, error) {
	data, err := readFile("CA file", file)
	if err != nil {
		return nil, err
	}
	return parsePool(file, data)
}

// parsePool is the pool of the CA certificates in data, read from file.
func parsePool(file string, data []byte) (*x509.CertPool, error) {
	certs, err := parseCertificates("CA file", file, data)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// describe names a certificate in an error: its subject and serial.
func describe(c *x509.Certificate) string {
	return fmt.Sprintf("subject %q, serial %x", c.Subject.String(), c.SerialNumber)
}
