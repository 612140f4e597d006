package tlsfiles

import (
	"crypto/tls"
	"errors"
	"testing"

	"github.com/stratalog/strata/tlsfiles/tlstest"
)

// TestClient checks the client configuration: the server is verified
// against the CA file and the name, a client certificate is offered when
// given, and TLS 1.1 is refused from the client's side too.
func TestClient(t *testing.T) {
	t.Parallel()
	pki := tlstest.Write(t, t.TempDir(), "127.0.0.1", "broker-1.example")
	cert, key := pki.Client("alice")
	server, err := NewServer(Files{CertFile: pki.ServerCert, KeyFile: pki.ServerKey, CAFile: pki.CAFile}, ClientAuthRequested, nil)
	if err != nil {
		t.Fatal(err)
	}
	other := tlstest.Write(t, t.TempDir())

	for _, c := range []struct {
		name       string
		files      Files
		serverName string
		serverMax  uint16
		principal  string // "" : refused
	}{
		{"CA only", Files{CAFile: pki.CAFile}, "broker-1.example", 0, "User:ANONYMOUS"},
		{"by IP", Files{CAFile: pki.CAFile}, "127.0.0.1", 0, "User:ANONYMOUS"},
		{"client certificate", Files{CAFile: pki.CAFile, CertFile: cert, KeyFile: key}, "broker-1.example", 0, "User:CN=alice"},
		{"wrong name", Files{CAFile: pki.CAFile}, "broker-2.example", 0, ""},
		{"another CA", Files{CAFile: other.CAFile}, "broker-1.example", 0, ""},
		{"system pool", Files{}, "broker-1.example", 0, ""},
		{"server at most TLS 1.1", Files{CAFile: pki.CAFile}, "broker-1.example", tls.VersionTLS11, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			client, err := Client(c.files, c.serverName)
			if err != nil {
				t.Fatal(err)
			}
			if client.MinVersion != tls.VersionTLS12 || client.ServerName != c.serverName {
				t.Errorf("MinVersion %x, ServerName %q", client.MinVersion, client.ServerName)
			}
			serverConfig := server.Config()
			if c.serverMax != 0 {
				// A server stuck on TLS 1.1: this package's server refuses it.
				serverConfig = &tls.Config{MaxVersion: c.serverMax, MinVersion: tls.VersionTLS10,
					Certificates: server.current.Load().config.Certificates}
			}
			o := handshake(t, serverConfig, client)
			switch {
			case c.principal == "" && o.ok():
				t.Errorf("handshake succeeded, want it refused")
			case c.principal != "" && !o.ok():
				t.Errorf("server: %v, client: %v", o.serverErr, o.clientErr)
			case c.principal != "" && Principal(o.server) != c.principal:
				t.Errorf("principal %q, want %q", Principal(o.server), c.principal)
			}
		})
	}
}

func TestClientErrors(t *testing.T) {
	t.Parallel()
	pki := tlstest.Write(t, t.TempDir())
	cert, key := pki.Client("alice")
	for _, c := range []struct {
		name  string
		files Files
		want  error
	}{
		{"certificate without key", Files{CertFile: cert}, ErrMissingFile},
		{"key without certificate", Files{KeyFile: key}, ErrMissingFile},
		{"CA file holds a key", Files{CAFile: key}, ErrNoCertificate},
		{"key of another certificate", Files{CertFile: cert, KeyFile: pki.ServerKey}, ErrKeyMismatch},
	} {
		if _, err := Client(c.files, ""); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
