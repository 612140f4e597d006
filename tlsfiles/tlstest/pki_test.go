package tlstest_test

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/tlsfiles/tlstest"
)

// TestWrite checks the files Write and Client write: the server
// certificate verifies for each host against the CA, the client
// certificate for client authentication, the keystore holds a PKCS#8 key
// and the certificate, keys are private to their owner, and no file is
// written twice.
func TestWrite(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "pki")
	pki := tlstest.Write(t, dir, "127.0.0.1", "localhost", "::1", "broker-1.example")
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, pki.CAFile))

	server := readCert(t, pki.ServerCert)
	for _, host := range pki.Hosts {
		if _, err := server.Verify(x509.VerifyOptions{DNSName: host, Roots: roots}); err != nil {
			t.Errorf("server certificate for %s: %v", host, err)
		}
		// Brokers also present their keystore as clients to each other.
		if _, err := server.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("server certificate as a client: %v", err)
		}
	}
	if len(server.IPAddresses) != 2 || len(server.DNSNames) != 2 {
		t.Errorf("IP SANs %v, DNS SANs %v", server.IPAddresses, server.DNSNames)
	}

	var types []string
	for rest := readFile(t, pki.ServerKeystore); ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		types = append(types, block.Type)
	}
	if got := strings.Join(types, ","); got != "PRIVATE KEY,CERTIFICATE" {
		t.Errorf("keystore blocks %s, want PRIVATE KEY,CERTIFICATE", got)
	}

	certFile, keyFile := pki.Client("alice")
	again, _ := pki.Client("alice")
	odd, _ := pki.Client("CN=x/../y")
	if certFile == again || filepath.Dir(odd) != dir {
		t.Errorf("client files %s, %s, %s", certFile, again, odd)
	}
	client := readCert(t, certFile)
	if client.Subject.CommonName != "alice" {
		t.Errorf("client subject %s", client.Subject)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots}); err == nil {
		t.Error("client certificate verifies for server authentication")
	}

	renewed, renewedKey, renewedKeystore := pki.Server()
	if renewed == pki.ServerCert || readCert(t, renewed).SerialNumber.Cmp(server.SerialNumber) == 0 {
		t.Error("Server reissued the same certificate")
	}
	for _, key := range []string{pki.ServerKey, pki.ServerKeystore, keyFile, renewedKey, renewedKeystore} {
		info, err := os.Stat(key)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", key, info.Mode().Perm())
		}
	}
}

func readFile(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readCert(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(readFile(t, file))
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("%s holds no certificate", file)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
