package tlsfiles

import (
	"crypto/tls"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/tlsfiles/tlstest"
)

// mustClient is Client(f, serverName), failing t on an error.
func mustClient(t *testing.T, f Files, serverName string) *tls.Config {
	t.Helper()
	c, err := Client(f, serverName)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServerClientAuth handshakes a Server, for each ssl.client.auth, with
// clients with and without a certificate, and checks who is admitted and
// under which principal.
func TestServerClientAuth(t *testing.T) {
	t.Parallel()
	pki := tlstest.Write(t, t.TempDir(), "127.0.0.1", "localhost")
	aliceCert, aliceKey := pki.Client("alice")
	other := tlstest.Write(t, t.TempDir())
	strangerCert, strangerKey := other.Client("stranger")

	anonymous := Files{CAFile: pki.CAFile}
	alice := Files{CAFile: pki.CAFile, CertFile: aliceCert, KeyFile: aliceKey}
	stranger := Files{CAFile: pki.CAFile, CertFile: strangerCert, KeyFile: strangerKey}
	for _, c := range []struct {
		name      string
		auth      ClientAuth
		client    Files
		maxTLS    uint16
		admitted  bool
		principal string
	}{
		{"none, no certificate", ClientAuthNone, anonymous, 0, true, "User:ANONYMOUS"},
		{"none, a certificate is not asked for", ClientAuthNone, alice, 0, true, "User:ANONYMOUS"},
		{"requested, no certificate", ClientAuthRequested, anonymous, 0, true, "User:ANONYMOUS"},
		{"requested, certificate", ClientAuthRequested, alice, 0, true, "User:CN=alice"},
		{"requested, certificate of another CA", ClientAuthRequested, stranger, 0, false, ""},
		{"required, no certificate", ClientAuthRequired, anonymous, 0, false, ""},
		{"required, certificate", ClientAuthRequired, alice, 0, true, "User:CN=alice"},
		{"required, certificate over TLS 1.2", ClientAuthRequired, alice, tls.VersionTLS12, true, "User:CN=alice"},
		{"required, no certificate over TLS 1.2", ClientAuthRequired, anonymous, tls.VersionTLS12, false, ""},
		{"required, certificate of another CA", ClientAuthRequired, stranger, 0, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, err := NewServer(Files{CertFile: pki.ServerCert, KeyFile: pki.ServerKey, CAFile: pki.CAFile}, c.auth, nil)
			if err != nil {
				t.Fatal(err)
			}
			client := mustClient(t, c.client, "")
			client.ServerName = "localhost"
			client.MaxVersion = c.maxTLS
			o := handshake(t, s.Config(), client)
			if o.ok() != c.admitted {
				t.Fatalf("admitted %v (server: %v, client: %v), want %v", o.ok(), o.serverErr, o.clientErr, c.admitted)
			}
			if !c.admitted {
				return
			}
			if got := Principal(o.server); got != c.principal {
				t.Errorf("principal %q, want %q", got, c.principal)
			}
			if o.server.Version < tls.VersionTLS12 {
				t.Errorf("negotiated %s", tls.VersionName(o.server.Version))
			}
		})
	}
}

// TestServerRefusesOldTLS checks that a client offering at most TLS 1.1 is
// refused, whatever the client authentication.
func TestServerRefusesOldTLS(t *testing.T) {
	t.Parallel()
	pki := tlstest.Write(t, t.TempDir())
	for _, version := range []uint16{tls.VersionTLS10, tls.VersionTLS11} {
		s, err := NewServer(Files{CertFile: pki.ServerCert, KeyFile: pki.ServerKey}, ClientAuthNone, nil)
		if err != nil {
			t.Fatal(err)
		}
		client := mustClient(t, Files{CAFile: pki.CAFile}, "localhost")
		client.MinVersion, client.MaxVersion = version, version
		if o := handshake(t, s.Config(), client); o.ok() {
			t.Errorf("%s admitted", tls.VersionName(version))
		} else if o.serverErr == nil {
			t.Errorf("%s: the server saw no error (client: %v)", tls.VersionName(version), o.clientErr)
		}
	}
}

// TestServerKeystore serves from one file holding the key and the chain,
// as Kafka's ssl.keystore.location with ssl.keystore.type=PEM.
func TestServerKeystore(t *testing.T) {
	t.Parallel()
	pki := tlstest.Write(t, t.TempDir())
	s, err := NewServer(Files{CertFile: pki.ServerKeystore, KeyFile: pki.ServerKeystore}, ClientAuthNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := handshake(t, s.Config(), mustClient(t, Files{CAFile: pki.CAFile}, "localhost")); !o.ok() {
		t.Fatalf("server: %v, client: %v", o.serverErr, o.clientErr)
	}
	if got, want := s.Leaf().DNSNames, []string{"localhost"}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("Leaf().DNSNames = %v, want %v", got, want)
	}
}

// reloadFixture is a Server over files the test replaces, on a clock the
// test moves, recording what onError reports.
type reloadFixture struct {
	t        *testing.T
	pki      tlstest.PKI
	files    Files
	server   *Server
	clock    atomic.Int64 // Unix nanoseconds
	mu       sync.Mutex
	reported []error
}

func newReloadFixture(t *testing.T, auth ClientAuth) *reloadFixture {
	t.Helper()
	dir := t.TempDir()
	f := &reloadFixture{t: t, pki: tlstest.Write(t, filepath.Join(dir, "pki"))}
	f.files = Files{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"), CAFile: filepath.Join(dir, "ca.pem")}
	f.replace(f.files.CertFile, f.pki.ServerCert)
	f.replace(f.files.KeyFile, f.pki.ServerKey)
	f.replace(f.files.CAFile, f.pki.CAFile)
	f.clock.Store(time.Now().UnixNano())
	server, err := newServer(f.files, auth, func(err error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.reported = append(f.reported, err)
	}, func() time.Time { return time.Unix(0, f.clock.Load()) })
	if err != nil {
		t.Fatal(err)
	}
	f.server = server
	return f
}

// replace writes the contents of from over to, by a rename as a careful
// operator (or cert-manager) does.
func (f *reloadFixture) replace(to, from string) {
	f.t.Helper()
	f.write(to, f.read(from))
}

func (f *reloadFixture) read(file string) []byte {
	f.t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

func (f *reloadFixture) write(to string, data []byte) {
	f.t.Helper()
	tmp := to + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Rename(tmp, to); err != nil {
		f.t.Fatal(err)
	}
}

// advance moves the clock on by d.
func (f *reloadFixture) advance(d time.Duration) { f.clock.Add(int64(d)) }

// served is the serial of the certificate a client is served now.
func (f *reloadFixture) served() *big.Int {
	f.t.Helper()
	o := handshake(f.t, f.server.Config(), mustClient(f.t, Files{CAFile: f.pki.CAFile}, "localhost"))
	if !o.ok() {
		f.t.Fatalf("handshake: server: %v, client: %v", o.serverErr, o.clientErr)
	}
	return o.client.PeerCertificates[0].SerialNumber
}

// serial is the serial of the certificate in file.
func (f *reloadFixture) serial(file string) *big.Int {
	f.t.Helper()
	certs, err := parseCertificates("certificate file", file, f.read(file))
	if err != nil {
		f.t.Fatal(err)
	}
	return certs[0].SerialNumber
}

// reports is how many failures onError was given.
func (f *reloadFixture) reports() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reported)
}

// TestServerReload replaces the certificate on disk and checks that the
// next handshake after the check interval serves it; that a broken
// replacement keeps the old one and is reported once; and that a
// certificate replaced before its key is served once the key follows.
func TestServerReload(t *testing.T) {
	t.Parallel()
	f := newReloadFixture(t, ClientAuthNone)
	if f.server.every != time.Second {
		t.Errorf("check interval %v, want 1s", f.server.every)
	}
	first := f.serial(f.pki.ServerCert)
	if got := f.served(); got.Cmp(first) != 0 {
		t.Fatalf("served %x, want %x", got, first)
	}

	cert2, key2, _ := f.pki.Server()
	f.replace(f.files.KeyFile, key2)
	f.replace(f.files.CertFile, cert2)
	f.advance(500 * time.Millisecond)
	if got := f.served(); got.Cmp(first) != 0 {
		t.Errorf("within the check interval: served %x, want the first certificate %x", got, first)
	}
	f.advance(500 * time.Millisecond)
	second := f.serial(cert2)
	if got := f.served(); got.Cmp(second) != 0 {
		t.Fatalf("after the check interval: served %x, want the replacement %x", got, second)
	}
	if err := f.server.Err(); err != nil || f.reports() != 0 {
		t.Fatalf("Err() = %v after a good reload, %d reports", err, f.reports())
	}

	// A broken certificate file: the second certificate stays, reported once.
	f.write(f.files.CertFile, []byte("-----BEGIN CERTIFICATE-----\nbroken\n"))
	for range 3 {
		f.advance(time.Second)
		if got := f.served(); got.Cmp(second) != 0 {
			t.Fatalf("after a broken replacement: served %x, want the previous %x", got, second)
		}
	}
	if err := f.server.Err(); !errors.Is(err, ErrNotPEM) {
		t.Errorf("Err() = %v, want ErrNotPEM", err)
	}
	if n := f.reports(); n != 1 {
		t.Errorf("onError called %d times for one broken file, want 1", n)
	}

	// A new certificate before its key: refused until the key follows.
	cert3, key3, _ := f.pki.Server()
	f.replace(f.files.CertFile, cert3)
	f.advance(time.Second)
	if got := f.served(); got.Cmp(second) != 0 {
		t.Errorf("certificate without its key: served %x, want the previous %x", got, second)
	}
	if err := f.server.Err(); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("Err() = %v, want ErrKeyMismatch", err)
	}
	if n := f.reports(); n != 2 {
		t.Errorf("onError called %d times, want 2 (a new failure)", n)
	}
	f.replace(f.files.KeyFile, key3)
	f.advance(time.Second)
	if got, third := f.served(), f.serial(cert3); got.Cmp(third) != 0 {
		t.Errorf("once the key followed: served %x, want %x", got, third)
	}
	if err := f.server.Err(); err != nil {
		t.Errorf("Err() = %v after a good reload", err)
	}

	// A removed file is a failure too, and the certificate stays.
	if err := os.Remove(f.files.KeyFile); err != nil {
		t.Fatal(err)
	}
	f.advance(time.Second)
	f.served()
	if err := f.server.Err(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Err() = %v, want a missing file", err)
	}
}

// TestServerReloadCA replaces the CA file and checks that client
// certificates are then verified against the new CA.
func TestServerReloadCA(t *testing.T) {
	t.Parallel()
	f := newReloadFixture(t, ClientAuthRequired)
	oldCert, oldKey := f.pki.Client("old")
	next := tlstest.Write(t, t.TempDir())
	newCert, newKey := next.Client("new")
	admitted := func(cert, key string) bool {
		client := mustClient(t, Files{CAFile: f.pki.CAFile, CertFile: cert, KeyFile: key}, "localhost")
		return handshake(t, f.server.Config(), client).ok()
	}
	if !admitted(oldCert, oldKey) || admitted(newCert, newKey) {
		t.Fatal("before the CA file changed: want the old CA's client only")
	}
	f.replace(f.files.CAFile, next.CAFile)
	f.advance(time.Second)
	if admitted(oldCert, oldKey) || !admitted(newCert, newKey) {
		t.Error("after the CA file changed: want the new CA's client only")
	}
}

// TestNewServerErrors checks that each misconfiguration is refused at once
// with its sentinel and the file's name.
func TestNewServerErrors(t *testing.T) {
	t.Parallel()
	pki := tlstest.Write(t, t.TempDir())
	files := writePEMFixtures(t, pki)
	for _, c := range []struct {
		name  string
		files Files
		auth  ClientAuth
		want  error
		file  string // named in the message
	}{
		{"no certificate", Files{KeyFile: pki.ServerKey}, ClientAuthNone, ErrMissingFile, ""},
		{"requested without a CA", Files{CertFile: pki.ServerCert, KeyFile: pki.ServerKey}, ClientAuthRequested, ErrMissingFile, ""},
		{"required without a CA", Files{CertFile: pki.ServerCert, KeyFile: pki.ServerKey}, ClientAuthRequired, ErrMissingFile, ""},
		{"unknown client auth", Files{CertFile: pki.ServerCert, KeyFile: pki.ServerKey}, "optional", ErrInvalidClientAuth, ""},
		{"missing certificate file", Files{CertFile: files.missing, KeyFile: pki.ServerKey}, ClientAuthNone, os.ErrNotExist, files.missing},
		{"missing CA file", Files{CertFile: pki.ServerCert, KeyFile: pki.ServerKey, CAFile: files.missing}, ClientAuthRequired, os.ErrNotExist, files.missing},
		{"certificate file holds a key", Files{CertFile: pki.ServerKey, KeyFile: pki.ServerKey}, ClientAuthNone, ErrNoCertificate, pki.ServerKey},
		{"key file holds a certificate", Files{CertFile: pki.ServerCert, KeyFile: pki.ServerCert}, ClientAuthNone, ErrNoPrivateKey, pki.ServerCert},
		{"CA file holds a key", Files{CertFile: pki.ServerCert, KeyFile: pki.ServerKey, CAFile: pki.ServerKey}, ClientAuthRequired, ErrNoCertificate, pki.ServerKey},
		{"not PEM", Files{CertFile: files.der, KeyFile: pki.ServerKey}, ClientAuthNone, ErrNotPEM, files.der},
		{"encrypted PKCS#8 key", Files{CertFile: pki.ServerCert, KeyFile: files.encryptedPKCS8}, ClientAuthNone, ErrEncryptedKey, files.encryptedPKCS8},
		{"encrypted legacy key", Files{CertFile: pki.ServerCert, KeyFile: files.encryptedLegacy}, ClientAuthNone, ErrEncryptedKey, files.encryptedLegacy},
		{"two keys", Files{CertFile: pki.ServerCert, KeyFile: files.twoKeys}, ClientAuthNone, ErrNoPrivateKey, files.twoKeys},
		{"key of another certificate", Files{CertFile: pki.ServerCert, KeyFile: files.otherKey}, ClientAuthNone, ErrKeyMismatch, files.otherKey},
		{"chain in the wrong order", Files{CertFile: files.caFirst, KeyFile: pki.ServerKey}, ClientAuthNone, ErrKeyMismatch, files.caFirst},
		{"expired certificate", Files{CertFile: files.expiredCert, KeyFile: files.expiredKey}, ClientAuthNone, ErrExpired, files.expiredCert},
		{"corrupt certificate", Files{CertFile: files.corruptCert, KeyFile: pki.ServerKey}, ClientAuthNone, ErrNoCertificate, files.corruptCert},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewServer(c.files, c.auth, nil)
			if !errors.Is(err, c.want) {
				t.Fatalf("NewServer: %v, want %v", err, c.want)
			}
			if c.file != "" && !containsAll(err.Error(), c.file) {
				t.Errorf("%q does not name %s", err, c.file)
			}
			if c.want == ErrEncryptedKey && !containsAll(err.Error(), "openssl pkey -in "+c.file) {
				t.Errorf("%q does not name the fix", err)
			}
		})
	}
}

// TestServerKeyForms serves PKCS#1 RSA and SEC 1 EC keys, besides the
// PKCS#8 keys tlstest writes.
func TestServerKeyForms(t *testing.T) {
	t.Parallel()
	pki := tlstest.Write(t, t.TempDir())
	files := writePEMFixtures(t, pki)
	for name, pair := range map[string][2]string{
		"PKCS#1 RSA": {files.rsaCert, files.rsaKey},
		"SEC 1 EC":   {files.ecCert, files.ecKey},
	} {
		s, err := NewServer(Files{CertFile: pair[0], KeyFile: pair[1]}, ClientAuthNone, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// The certificate is self-signed: the client trusts it as its own CA.
		client := mustClient(t, Files{CAFile: pair[0]}, "localhost")
		if o := handshake(t, s.Config(), client); !o.ok() {
			t.Errorf("%s: server: %v, client: %v", name, o.serverErr, o.clientErr)
		}
	}
}

func TestParseClientAuth(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]ClientAuth{
		"":          ClientAuthNone,
		"none":      ClientAuthNone,
		"requested": ClientAuthRequested,
		"REQUIRED":  ClientAuthRequired,
		" required": ClientAuthRequired,
	} {
		if got, err := ParseClientAuth(in); err != nil || got != want {
			t.Errorf("ParseClientAuth(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"optional", "true", "want"} {
		if _, err := ParseClientAuth(in); !errors.Is(err, ErrInvalidClientAuth) {
			t.Errorf("ParseClientAuth(%q): %v, want ErrInvalidClientAuth", in, err)
		}
	}
}
