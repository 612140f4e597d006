package tlsfiles

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/tlsfiles/tlstest"
)

// pemFixtures are files that are wrong in one way each, and certificates
// with keys in the forms tlstest does not write.
type pemFixtures struct {
	missing         string // a path with no file
	der             string // a certificate in DER, not PEM
	encryptedPKCS8  string // ENCRYPTED PRIVATE KEY
	encryptedLegacy string // EC PRIVATE KEY with Proc-Type: 4,ENCRYPTED
	twoKeys         string
	otherKey        string // a client's key, not the server certificate's
	caFirst         string // the CA, then the server certificate
	corruptCert     string // a CERTIFICATE block that does not parse
	expiredCert     string
	expiredKey      string
	rsaCert, rsaKey string // self-signed for localhost, PKCS#1 key
	ecCert, ecKey   string // self-signed for localhost, SEC 1 key
}

func writePEMFixtures(t *testing.T, pki tlstest.PKI) pemFixtures {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data ...[]byte) string {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(strings.Join(bytesToStrings(data), "")), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	read := func(file string) []byte {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	block := func(typ string, headers map[string]string, b []byte) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: typ, Headers: headers, Bytes: b})
	}
	serverCert, _ := pem.Decode(read(pki.ServerCert))
	_, clientKey := pki.Client("other")

	var f pemFixtures
	f.missing = filepath.Join(dir, "missing.pem")
	f.der = write("cert.der", serverCert.Bytes)
	f.encryptedPKCS8 = write("encrypted.pem", block("ENCRYPTED PRIVATE KEY", nil, []byte("ciphertext")))
	f.encryptedLegacy = write("legacy.pem", block("EC PRIVATE KEY", map[string]string{
		"Proc-Type": "4,ENCRYPTED",
		"DEK-Info":  "AES-128-CBC,00112233445566778899AABBCCDDEEFF",
	}, []byte("ciphertext")))
	f.twoKeys = write("two-keys.pem", read(pki.ServerKey), read(clientKey))
	f.otherKey = clientKey
	f.caFirst = write("ca-first.pem", read(pki.CAFile), read(pki.ServerCert))
	f.corruptCert = write("corrupt.pem", block("CERTIFICATE", nil, []byte("not DER")))

	ecdsaKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	selfSigned := func(key crypto.Signer, notAfter time.Time) []byte {
		template := &x509.Certificate{
			SerialNumber: big.NewInt(7),
			Subject:      pkix.Name{CommonName: "localhost"},
			DNSNames:     []string{"localhost"},
			NotBefore:    notAfter.Add(-24 * time.Hour),
			NotAfter:     notAfter,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
		if err != nil {
			t.Fatal(err)
		}
		return block("CERTIFICATE", nil, der)
	}
	expired := ecdsaKey()
	expiredDER, err := x509.MarshalPKCS8PrivateKey(expired)
	if err != nil {
		t.Fatal(err)
	}
	f.expiredCert = write("expired.pem", selfSigned(expired, time.Now().Add(-time.Hour)))
	f.expiredKey = write("expired-key.pem", block("PRIVATE KEY", nil, expiredDER))

	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	f.rsaCert = write("rsa.pem", selfSigned(rsaKey, time.Now().Add(time.Hour)))
	f.rsaKey = write("rsa-key.pem", block("RSA PRIVATE KEY", nil, x509.MarshalPKCS1PrivateKey(rsaKey)))

	ecKey := ecdsaKey()
	sec1, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	f.ecCert = write("ec.pem", selfSigned(ecKey, time.Now().Add(time.Hour)))
	// openssl ecparam -genkey writes the parameters before the key.
	f.ecKey = write("ec-key.pem", block("EC PARAMETERS", nil, []byte{6, 8, 42, 134, 72, 206, 61, 3, 1, 7}), block("EC PRIVATE KEY", nil, sec1))
	return f
}

func bytesToStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
