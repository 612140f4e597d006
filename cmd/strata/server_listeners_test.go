package main

import (
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/tlsfiles/tlstest"
)

// Listener and security settings that cannot work are refused before the
// server binds anything, with a line naming the setting and the fix.
func TestServerRefusesBadSecuritySettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pki := tlstest.Write(t, dir, "127.0.0.1")
	password := filepath.Join(dir, "password")
	if err := os.WriteFile(password, []byte("pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keystore := []string{"--ssl.keystore.location", pki.ServerKeystore, "--ssl.truststore.location", pki.CAFile}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"both listener forms", []string{"--listen", "127.0.0.1:0", "--listeners", "PLAINTEXT://127.0.0.1:0"}, "--listeners replaces --listen"},
		{"a name without a protocol", []string{"--listeners", "INTERNAL://127.0.0.1:0"}, "listener.security.protocol.map"},
		{"a bad map entry", []string{"--listeners", "INTERNAL://127.0.0.1:0", "--listener.security.protocol.map", "INTERNAL:TLS"}, "NAME:PROTOCOL"},
		{"no host:port", []string{"--listeners", "PLAINTEXT://nowhere"}, "NAME://host:port"},
		{"advertising an unknown listener", []string{"--listeners", "PLAINTEXT://127.0.0.1:0", "--advertised.listeners", "SSL://x:1"}, "not in --listeners"},
		{"TLS without a keystore", []string{"--listeners", "SSL://127.0.0.1:0"}, "--ssl.keystore.location"},
		{"a keystore without TLS", append([]string{"--listeners", "PLAINTEXT://127.0.0.1:0"}, keystore...), "no listener uses TLS"},
		{"a JKS keystore", append([]string{"--listeners", "SSL://127.0.0.1:0", "--ssl.keystore.type", "JKS"}, keystore...), "PEM files only"},
		{"an unknown client auth", append([]string{"--listeners", "SSL://127.0.0.1:0", "--ssl.client.auth", "sometimes"}, keystore...), "--ssl.client.auth"},
		{"an unknown inter-broker listener", []string{"--listeners", "PLAINTEXT://127.0.0.1:0", "--inter.broker.listener.name", "REPLICAS"}, "not one of the listeners"},
		{"a SASL inter-broker listener without a user", append([]string{"--listeners", "SASL_SSL://127.0.0.1:0"}, keystore...), "--sasl.inter.broker.username"},
		{"a user without a password", []string{"--sasl.inter.broker.username", "broker"}, "--sasl.inter.broker.password.file"},
		{"an unknown mechanism", append([]string{"--listeners", "SASL_SSL://127.0.0.1:0", "--sasl.inter.broker.username", "b", "--sasl.inter.broker.password.file", password,
			"--sasl.mechanism.inter.broker.protocol", "GSSAPI"}, keystore...), "want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"},
		{"the metadata port over SSL without a truststore", []string{"--listeners", "SSL://127.0.0.1:0", "--ssl.keystore.location", pki.ServerKeystore}, "--meta.security.protocol"},
		{"an unknown metadata protocol", append([]string{"--listeners", "SSL://127.0.0.1:0", "--meta.security.protocol", "SASL_SSL"}, keystore...), "want SSL or PLAINTEXT"},
		{"an unknown enabled mechanism", []string{"--sasl.enabled.mechanisms", "PLAIN,GSSAPI"}, "sasl.enabled.mechanisms"},
		{"a super user without a type", []string{"--super.users", "admin"}, "super.users"},
	} {
		code, _, stderr := runCLI(t, "", append([]string{"server", "--data", t.TempDir()}, tc.args...)...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want it to say %q", tc.name, code, stderr, tc.want)
		}
	}
}

// TestTheSecurityDefaultsFollowTheListeners: once a listener identifies
// its clients, by SASL or by client certificates asked for (requested as
// much as required), a resource without ACLs is closed and the admin
// address asks for a credential; on listeners that identify no one both
// stay open, and an explicit allow.everyone.if.no.acl.found wins.
func TestTheSecurityDefaultsFollowTheListeners(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pki := tlstest.Write(t, dir, "127.0.0.1")
	password := writeFile(t, dir, "broker.password", "broker-secret\n")
	ssl := func(auth string) []string {
		return []string{"--listeners", "SSL://127.0.0.1:0", "--ssl.keystore.location", pki.ServerKeystore,
			"--ssl.truststore.location", pki.CAFile, "--ssl.client.auth", auth}
	}
	for _, tc := range []struct {
		name          string
		args          []string
		allowEveryone bool
	}{
		{"plain TCP", []string{"--listeners", "PLAINTEXT://127.0.0.1:0"}, true},
		{"TLS without client certificates", ssl("none"), true},
		{"client certificates requested", ssl("requested"), false},
		{"client certificates required", ssl("required"), false},
		{"SASL", []string{"--listeners", "SASL_PLAINTEXT://127.0.0.1:0", "--sasl.inter.broker.username", "broker",
			"--sasl.inter.broker.password.file", password}, false},
		{"requested, everyone allowed by the flag", append(ssl("requested"), "--allow.everyone.if.no.acl.found=true"), true},
	} {
		var s securityConfig
		fs := flag.NewFlagSet("server", flag.ContinueOnError)
		s.register(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		sec, err := s.build(fs, "", "", slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if sec.settings.AllowEveryoneIfNoACL != tc.allowEveryone {
			t.Errorf("%s: allow.everyone.if.no.acl.found is %v, want %v", tc.name, sec.settings.AllowEveryoneIfNoACL, tc.allowEveryone)
		}
		identifies := tc.name != "plain TCP" && tc.name != "TLS without client certificates"
		if sec.admin.Required != identifies {
			t.Errorf("%s: the admin address asks for a credential: %v, want %v", tc.name, sec.admin.Required, identifies)
		}
	}
}
