package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stratalog/strata/tlsfiles/tlstest"
)

// clearSecurityEnv unsets the environment the security flags read, so a
// test sees only what it sets. Tests that call it cannot run in parallel.
func clearSecurityEnv(t *testing.T) {
	t.Helper()
	for _, name := range []string{"STRATA_TLS_CA", "STRATA_TLS_CERT", "STRATA_TLS_KEY", "STRATA_SASL_MECHANISM", "STRATA_SASL_USER",
		"STRATA_SASL_PASSWORD", "STRATA_ADMIN_TOKEN", "STRATA_NEW_USER_PASSWORD"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
}

// writeFile writes content to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSecurityFlagsRefuseWhatCannotLogIn: each incomplete or wrong
// combination of the TLS and SASL flags is refused before anything is
// dialled, exit 2, with one line naming the flag and the fix.
func TestSecurityFlagsRefuseWhatCannotLogIn(t *testing.T) {
	clearSecurityEnv(t)
	dir := t.TempDir()
	pki := tlstest.Write(t, filepath.Join(dir, "pki"), "127.0.0.1")
	password := writeFile(t, dir, "password", "s3cret\n")
	empty := writeFile(t, dir, "empty", "\n")
	notPEM := writeFile(t, dir, "ca.jks", "\xfe\xed\xfe\xed not a PEM file")
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sasl-mechanism", "SCRAM-SHA-512"}, "--sasl-mechanism SCRAM-SHA-512 needs a user to log in as (give --sasl-user (or STRATA_SASL_USER))"},
		{[]string{"--sasl-user", "alice", "--sasl-password-file", password}, "--sasl-user alice needs a mechanism to log in with (give --sasl-mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)"},
		{[]string{"--sasl-user", "alice", "--sasl-mechanism", "GSSAPI", "--sasl-password-file", password}, `--sasl-mechanism "GSSAPI": want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`},
		{[]string{"--sasl-user", "alice", "--sasl-mechanism", "PLAIN"}, "--sasl-user alice has no password (give --sasl-password-file FILE, or set STRATA_SASL_PASSWORD)"},
		{[]string{"--sasl-password-file", password}, "--sasl-password-file needs a user to log in as (give --sasl-user and --sasl-mechanism)"},
		{[]string{"--sasl-user", "alice", "--sasl-mechanism", "PLAIN", "--sasl-password-file", missing}, "--sasl-password-file: open " + missing + ": no such file or directory"},
		{[]string{"--sasl-user", "alice", "--sasl-mechanism", "PLAIN", "--sasl-password-file", empty}, "--sasl-password-file " + empty + " is empty"},
		{[]string{"--tls-cert", pki.ServerCert}, "--tls-cert and --tls-key go together (give the client certificate and its key, or neither)"},
		{[]string{"--tls-key", pki.ServerKey}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-ca", missing}, "--tls-ca: open " + missing + ": no such file or directory"},
		{[]string{"--tls-cert", missing, "--tls-key", pki.ServerKey}, "--tls-cert: open " + missing},
		{[]string{"--tls-ca", notPEM}, "TLS: not a PEM file: CA file " + notPEM + " holds no PEM block"},
	} {
		for _, command := range [][]string{{"topic", "list"}, {"produce", "t"}, {"group", "describe", "g"}} {
			args := append(append(command, tc.args...), "--bootstrap", "127.0.0.1:1", "--timeout", "1s")
			code, stdout, stderr := runCLI(t, "x\n", args...)
			if code != exitBadArgs || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("strata %s: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", strings.Join(args, " "), code, stdout, stderr, tc.want)
			}
		}
	}
}

// TestSASLPasswordSources: the password comes from --sasl-password-file
// (its trailing newline dropped) or else STRATA_SASL_PASSWORD; the file
// wins over the environment; the mechanism is matched in any case.
func TestSASLPasswordSources(t *testing.T) {
	clearSecurityEnv(t)
	dir := t.TempDir()
	file := writeFile(t, dir, "password", "from-file\r\n")
	for _, tc := range []struct {
		flags     saslFlags
		env       string
		mechanism string
	}{
		{saslFlags{mechanism: "scram-sha-256", user: "alice", passwordFile: file}, "", "SCRAM-SHA-256"},
		{saslFlags{mechanism: "SCRAM-SHA-512", user: "alice"}, "from-env", "SCRAM-SHA-512"},
		{saslFlags{mechanism: "plain", user: "alice", passwordFile: file}, "from-env", "PLAIN"},
	} {
		t.Setenv("STRATA_SASL_PASSWORD", tc.env)
		m, err := tc.flags.login()
		if err != nil || m == nil || m.Name() != tc.mechanism {
			t.Errorf("%+v with env %q: %v, %v; want %s", tc.flags, tc.env, m, err, tc.mechanism)
		}
	}
	// PLAIN's first message carries the password: the file's, newline gone.
	t.Setenv("STRATA_SASL_PASSWORD", "from-env")
	m, err := (&saslFlags{mechanism: "PLAIN", user: "alice", passwordFile: file}).login()
	if err != nil {
		t.Fatal(err)
	}
	_, first, err := m.Authenticate(t.Context(), "127.0.0.1:9092")
	if err != nil || string(first) != "\x00alice\x00from-file" {
		t.Fatalf("PLAIN's message %q (%v), want the file's password", first, err)
	}
	var none securityFlags
	if opts, err := none.kgoOpts(); err != nil || len(opts) != 0 {
		t.Fatalf("no security flags: %d options, %v", len(opts), err)
	}
}

// TestSecurityEnvironmentDefaults: STRATA_TLS_CA, STRATA_SASL_MECHANISM
// and STRATA_SASL_USER are the flags' defaults, as STRATA_BOOTSTRAP is.
func TestSecurityEnvironmentDefaults(t *testing.T) {
	clearSecurityEnv(t)
	t.Setenv("STRATA_TLS_CA", "/etc/strata/ca.pem")
	t.Setenv("STRATA_SASL_MECHANISM", "SCRAM-SHA-512")
	t.Setenv("STRATA_SASL_USER", "alice")
	var c clientFlags
	c.register(newFlagSet(&env{}, "test", ""))
	if c.security.tls.ca != "/etc/strata/ca.pem" || !c.security.tls.on() || c.security.sasl.mechanism != "SCRAM-SHA-512" || c.security.sasl.user != "alice" {
		t.Fatalf("flags from the environment: %+v", c.security)
	}
}

// TestNoFlagTakesASecret reads every command's help: a flag whose name
// says password, token or secret must name a file holding it, for a
// flag's value shows in ps.
func TestNoFlagTakesASecret(t *testing.T) {
	t.Parallel()
	flagLine := regexp.MustCompile(`(?m)^  -(\S+)`)
	secretFlags := 0
	for _, c := range commands {
		_, stdout, _ := runCLI(t, "", append(strings.Fields(c.name), "-h")...)
		for _, m := range flagLine.FindAllStringSubmatch(stdout, -1) {
			name := strings.ToLower(m[1])
			if strings.Contains(name, "password") || strings.Contains(name, "token") || strings.Contains(name, "secret") {
				secretFlags++
				if !strings.HasSuffix(name, "-file") && !strings.HasSuffix(name, ".file") {
					t.Errorf("strata %s -%s takes a secret as its value", c.name, m[1])
				}
			}
		}
	}
	if secretFlags == 0 {
		t.Fatal("no command's help lists a password or token flag: the help format changed under this test")
	}
}

// TestLoginFailureIsOneLine: a refused login prints that the login failed
// and what to check, not Kafka's error text; the error still matches the
// Kafka code.
func TestLoginFailureIsOneLine(t *testing.T) {
	t.Parallel()
	flags := &clientFlags{bootstrap: "broker:9092", security: securityFlags{sasl: saslFlags{mechanism: "scram-sha-512", user: "alice"}}}
	err := connectError(flags, fmt.Errorf("unable to dial: %w", kerr.SaslAuthenticationFailed))
	got := explain(err)
	want := `login failed: broker:9092 refused user "alice" with SCRAM-SHA-512 (check the user (--sasl-user), the password (--sasl-password-file or STRATA_SASL_PASSWORD) and the mechanism (--sasl-mechanism);`
	if !strings.HasPrefix(got, want) || strings.Contains(got, "SASL_AUTHENTICATION_FAILED") || !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("explain(login failure) = %q\nwant it to start %q, without the Kafka text", got, want)
	}
	if got := explain(connectError(flags, kerr.UnsupportedSaslMechanism)); !strings.HasPrefix(got, "login failed: broker:9092 does not take SASL mechanism SCRAM-SHA-512") {
		t.Errorf("unsupported mechanism: %q", got)
	}
}
