package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// PKI is the files Write wrote, and the CA that signs more.
type PKI struct {
	// CAFile is the CA certificate, PEM: what clients trust
	// (ssl.truststore.location, ssl.ca.location) and what client
	// certificates chain to.
	CAFile string
	// ServerCert is the server certificate, PEM, for Hosts.
	ServerCert string
	// ServerKey is its private key, PKCS#8 PEM, unencrypted.
	ServerKey string
	// ServerKeystore is the key and the certificate in one PEM file, key
	// first: Kafka's ssl.keystore.location with ssl.keystore.type=PEM, and
	// both CertFile and KeyFile of tlsfiles.Files.
	ServerKeystore string
	// Hosts are the DNS names and IP addresses the server certificate is
	// for.
	Hosts []string

	ca *authority
}

// authority is the CA behind a PKI, shared by its copies.
type authority struct {
	t    testing.TB
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey

	mu struct {
		sync.Mutex
		// used are the base names written, so that no call overwrites
		// another's files.
		used map[string]bool
	}
}

// defaultHosts are the hosts of a server certificate when Write is given
// none: loopback by name and address.
var defaultHosts = []string{"localhost", "127.0.0.1", "::1"}

// Write generates a CA and a server certificate for hosts ("localhost",
// "127.0.0.1" and "::1" when none are given) into dir, which it creates if
// need be, and returns their files: ca.pem, server.pem, server.key and
// server.keystore.pem.
func Write(t testing.TB, dir string, hosts ...string) PKI {
	t.Helper()
	if len(hosts) == 0 {
		hosts = defaultHosts
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("tlstest: %v", err)
	}
	key := newKey(t)
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "strata test CA", Organization: []string{"strata tests"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		t.Fatalf("tlstest: creating the CA: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("tlstest: %v", err)
	}
	ca := &authority{t: t, dir: dir, cert: cert, key: key}
	ca.mu.used = map[string]bool{"ca": true}
	p := PKI{CAFile: ca.write("ca", ".pem", 0o644, certPEM(der)), Hosts: append([]string(nil), hosts...), ca: ca}
	p.ServerCert, p.ServerKey, p.ServerKeystore = ca.issueServer(hosts)
	return p
}

// Client issues a client certificate with the subject CN=cn (Kafka
// principal User:CN=cn, see tlsfiles.Principal) and returns its files:
// client-<cn>.pem and client-<cn>.key, with characters other than letters,
// digits, '-' and '.' replaced by '_' in the names, and -2, -3... added
// when the name was taken.
func (p PKI) Client(cn string) (certFile, keyFile string) {
	p.ca.t.Helper()
	return p.ca.issue("client-"+fileSafe(cn), &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// Server issues another server certificate from the same CA, for hosts
// (Hosts when none are given), into new files, and returns them: the
// certificate, its key, and both in one keystore file. A test of
// certificate rotation copies them over the files a server reads. The
// files are server-2.pem, server-2.key and server-2.keystore.pem, then
// server-3...
func (p PKI) Server(hosts ...string) (certFile, keyFile, keystoreFile string) {
	p.ca.t.Helper()
	if len(hosts) == 0 {
		hosts = p.Hosts
	}
	return p.ca.issueServer(hosts)
}

// issueServer issues a server certificate for hosts.
func (a *authority) issueServer(hosts []string) (certFile, keyFile, keystoreFile string) {
	a.t.Helper()
	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0], Organization: []string{"strata tests"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			template.IPAddresses = append(template.IPAddresses, ip)
		} else {
			template.DNSNames = append(template.DNSNames, h)
		}
	}
	certFile, keyFile = a.issue("server", template)
	return certFile, keyFile, a.keystore(certFile, keyFile)
}

// issue completes template (serial, validity, key usage), signs it with a
// new key, and writes <base>.pem and <base>.key (base made unique).
func (a *authority) issue(base string, template *x509.Certificate) (certFile, keyFile string) {
	a.t.Helper()
	key := newKey(a.t)
	now := time.Now()
	template.SerialNumber = serial(a.t)
	template.NotBefore = now.Add(-time.Hour)
	template.NotAfter = now.Add(7 * 24 * time.Hour)
	template.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, template, a.cert, key.Public(), a.key)
	if err != nil {
		a.t.Fatalf("tlstest: issuing %s: %v", base, err)
	}
	base = a.reserve(base)
	certFile = a.write(base, ".pem", 0o644, certPEM(der))
	keyFile = a.write(base, ".key", 0o600, keyPEM(a.t, key))
	return certFile, keyFile
}

// keystore writes the key and the certificate in one file, key first, as
// Kafka's PEM keystore holds them, next to the certificate file.
func (a *authority) keystore(certFile, keyFile string) string {
	a.t.Helper()
	cert, err := os.ReadFile(certFile)
	if err != nil {
		a.t.Fatalf("tlstest: %v", err)
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		a.t.Fatalf("tlstest: %v", err)
	}
	base := strings.TrimSuffix(filepath.Base(certFile), ".pem")
	return a.write(base, ".keystore.pem", 0o600, append(key, cert...))
}

// reserve returns base, or the first of base-2, base-3... not taken, and
// takes it.
func (a *authority) reserve(base string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	name := base
	for n := 2; a.mu.used[name]; n++ {
		name = fmt.Sprintf("%s-%d", base, n)
	}
	a.mu.used[name] = true
	return name
}

// write writes data to dir/<base><ext> with perm.
func (a *authority) write(base, ext string, perm os.FileMode, data []byte) string {
	a.t.Helper()
	file := filepath.Join(a.dir, base+ext)
	if err := os.WriteFile(file, data, perm); err != nil {
		a.t.Fatalf("tlstest: %v", err)
	}
	return file
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("tlstest: generating a key: %v", err)
	}
	return key
}

// serial is a random 127-bit serial number, as RFC 5280 asks (positive,
// at most 20 bytes).
func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatalf("tlstest: %v", err)
	}
	return n.Add(n, big.NewInt(1))
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func keyPEM(t testing.TB, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("tlstest: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// fileSafe is name with every character but letters, digits, '-' and '.'
// replaced by '_'.
func fileSafe(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, name)
}
