package main

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/offload"
	"github.com/stratalog/strata/tlsfiles"
	"github.com/stratalog/strata/tlsfiles/tlstest"
)

// secureAdmin is an admin server as a secured broker runs it: over TLS,
// asking for the token or a client certificate, with its PKI and token.
type secureAdmin struct {
	address   string
	pki       tlstest.PKI
	tokenFile string
}

func startAdminForCLI(t *testing.T, tlsOn bool) *secureAdmin {
	t.Helper()
	dir := t.TempDir()
	a := &secureAdmin{pki: tlstest.Write(t, filepath.Join(dir, "pki"), "127.0.0.1"), tokenFile: writeFile(t, dir, "admin.token", adminTestToken+"\n")}
	sec := adminSecurity{TokenFile: a.tokenFile, Required: true, Authorize: func(principal, _ string, _ acl.Operation) bool {
		return principal == "User:CN=operator" // a super user
	}}
	if tlsOn {
		server, err := tlsfiles.NewServer(tlsfiles.Files{CertFile: a.pki.ServerKeystore, KeyFile: a.pki.ServerKeystore, CAFile: a.pki.CAFile}, tlsfiles.ClientAuthRequested, nil)
		if err != nil {
			t.Fatal(err)
		}
		sec.TLS = server.Config()
	}
	admin := newAdminServer(adminHandlers{
		gatherer: prometheus.NewRegistry(),
		ready:    func() error { return nil },
		tierStatus: func(context.Context, string) (any, error) {
			return offload.Status{Partitions: []offload.PartitionStatus{}}, nil
		},
		drain: func(context.Context, int32, bool) error { return nil },
	}, slog.New(slog.DiscardHandler))
	if err := admin.secure(sec); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- admin.serve(ln) }()
	t.Cleanup(func() {
		admin.shutdown(context.Background())
		if err := <-done; err != nil {
			t.Errorf("admin serve: %v", err)
		}
	})
	a.address = ln.Addr().String()
	return a
}

// TestAdminCommandsOnASecuredAddress runs the commands that talk to the
// admin address alone against one served over TLS that wants a
// credential: the token from a file or STRATA_ADMIN_TOKEN, or a client
// certificate, works; each way of getting it wrong is one line with the
// fix.
func TestAdminCommandsOnASecuredAddress(t *testing.T) {
	clearSecurityEnv(t)
	a := startAdminForCLI(t, true)
	plain := startAdminForCLI(t, false)
	certFile, keyFile := a.pki.Client("operator")
	wrongToken := writeFile(t, t.TempDir(), "wrong.token", "not-the-token")
	ca := []string{"--tls-ca", a.pki.CAFile}
	with := func(args ...[]string) []string {
		var out []string
		for _, a := range args {
			out = append(out, a...)
		}
		return out
	}
	undrain := []string{"broker", "undrain", "3", "--admin", a.address}
	tier := []string{"tier", "status", "--admin", a.address}
	for _, tc := range []struct {
		name string
		args []string
		env  string // STRATA_ADMIN_TOKEN
		code int
		want string
	}{
		{"token file", with(undrain, ca, []string{"--admin-token-file", a.tokenFile}), "", 0, "broker 3 takes replicas again"},
		{"token from the environment", with(tier, ca), adminTestToken, 0, "TOPIC"},
		{"client certificate", with(tier, ca, []string{"--tls-cert", certFile, "--tls-key", keyFile}), "", 0, "TOPIC"},
		{"https:// says TLS", with([]string{"tier", "status", "--admin", "https://" + a.address, "--admin-token-file", a.tokenFile}, ca), "", 0, "TOPIC"},
		{"no credential", with(tier, ca), "", 1,
			"the admin address " + a.address + " asks for a credential: unauthorized: give the admin token as Authorization: Bearer <token> (--admin.token.file), or a client certificate over TLS (give the admin token with --admin-token-file FILE or STRATA_ADMIN_TOKEN"},
		{"wrong token", with(undrain, ca, []string{"--admin-token-file", wrongToken}), "", 1,
			"the admin address " + a.address + " refused the token: unauthorized: the bearer token is not the admin token (check --admin-token-file or STRATA_ADMIN_TOKEN against the server's --admin.token.file)"},
		{"no TLS flag, GET", with(tier, []string{"--admin-token-file", a.tokenFile}), "", 1, "serves HTTPS (give --tls-ca (or --tls), or --admin https://" + a.address + ")"},
		{"no TLS flag, DELETE", with(undrain, []string{"--admin-token-file", a.tokenFile}), "", 1, "(give --tls-ca (or --tls), or --admin https://" + a.address + ")"},
		{"system CAs", with(tier, []string{"--tls", "--admin-token-file", a.tokenFile}), "", 1,
			"its certificate is not signed by a CA this client trusts (give the CA that signed the server's certificate with --tls-ca (or STRATA_TLS_CA))"},
		{"TLS flags for a plain address", with([]string{"tier", "status", "--admin", plain.address, "--admin-token-file", plain.tokenFile}, ca), "", 1,
			"serves plain HTTP, not HTTPS (give --admin http://" + plain.address + " when the TLS flags are for the Kafka listener only)"},
		{"http:// says plain", with([]string{"tier", "status", "--admin", "http://" + plain.address, "--admin-token-file", plain.tokenFile}, ca), "", 0, "TOPIC"},
		{"another scheme", with([]string{"tier", "status", "--admin", "ftp://" + plain.address}), "", 2, `--admin "ftp://` + plain.address + `": the scheme is http or https`},
		{"empty token file", with(tier, ca, []string{"--admin-token-file", writeFile(t, t.TempDir(), "empty", "")}), "", 2, "--admin-token-file "},
	} {
		t.Setenv("STRATA_ADMIN_TOKEN", tc.env)
		code, stdout, stderr := runCLI(t, "", tc.args...)
		out := stdout
		if tc.code != 0 {
			out = stderr
		}
		if code != tc.code || !strings.Contains(out, tc.want) || (code != 0 && strings.Count(stderr, "\n") != 1) {
			t.Errorf("%s: strata %s: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.name, strings.Join(tc.args, " "), code, stdout, stderr, tc.code, tc.want)
		}
		if strings.Contains(stdout+stderr, adminTestToken) {
			t.Errorf("%s: the token was printed", tc.name)
		}
	}
}
