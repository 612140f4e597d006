package main

import (
	"context"
	"flag"
	"log/slog"
	"testing"
	"time"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/sasl"
)

// TestRegistryLogins: a password checked is taken again without another
// PBKDF2 (here with every check slot taken, where a check would wait),
// until the credential a check would use changes; checks beyond the slots
// wait for one; and a failed login counts against its host, whose next
// failure waits twice as long.
func TestRegistryLogins(t *testing.T) {
	t.Parallel()
	node := startMetaNode(t)
	setPassword := func(user, mechanism, password string) {
		t.Helper()
		cred, err := sasl.FromPassword(mechanism, password, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := node.Propose(t.Context(), &meta.AlterScramCredential{User: user, Upsert: []sasl.Credential{cred}}); err != nil {
			t.Fatal(err)
		}
	}
	setPassword("alice", sasl.ScramSHA512, "first")
	logins := newRegistryLogins(node.State, time.Millisecond)
	const host = "192.0.2.7"
	if !logins.check(t.Context(), host, "alice", "first") {
		t.Fatal("alice's password refused")
	}
	for range cap(logins.checks) {
		logins.checks <- struct{}{} // every check slot taken
	}
	remembered, cancelRemembered := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancelRemembered()
	if !logins.check(remembered, host, "alice", "first") {
		t.Fatal("alice's password, checked a moment ago, refused while every check slot is taken")
	}
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if logins.check(short, host, "alice", "guess") {
		t.Fatal("a wrong password taken")
	}
	if short.Err() == nil {
		t.Fatal("a password never checked did not wait for a check slot")
	}
	for range cap(logins.checks) {
		<-logins.checks
	}
	setPassword("alice", sasl.ScramSHA512, "second")
	if logins.check(t.Context(), host, "alice", "first") {
		t.Fatal("alice's old password taken after her credential changed")
	}
	if !logins.check(t.Context(), host, "alice", "second") {
		t.Fatal("alice's new password refused")
	}
	// A SHA-512 credential added beside the SHA-256 one is what a check
	// uses from then on: the SHA-256 password checked a moment ago is
	// not taken on its memory.
	setPassword("bob", sasl.ScramSHA256, "two-five-six")
	if !logins.check(t.Context(), host, "bob", "two-five-six") {
		t.Fatal("bob's SHA-256 password refused")
	}
	setPassword("bob", sasl.ScramSHA512, "five-one-two")
	if logins.check(t.Context(), host, "bob", "two-five-six") {
		t.Fatal("bob's SHA-256 password taken from memory once his SHA-512 credential, which a check uses, was added")
	}
	// Two failures above (the old passwords) counted against the host.
	if d := logins.failures.Delay(host, time.Second); d != 4*time.Second {
		t.Fatalf("the host's next failure waits %v, want 4s: its failed logins were not counted", d)
	}
}

// TestRegistryLoginsTakeTheFailedLoginDelay: the registry's failed
// logins wait --connection.failed.authentication.delay.ms, the Kafka
// listeners' setting, as the flag reaches the admin address's security.
func TestRegistryLoginsTakeTheFailedLoginDelay(t *testing.T) {
	t.Parallel()
	password := writeFile(t, t.TempDir(), "broker.password", "broker-secret\n")
	var s securityConfig
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	s.register(fs)
	if err := fs.Parse([]string{"--listeners", "SASL_PLAINTEXT://127.0.0.1:0", "--sasl.inter.broker.username", "broker",
		"--sasl.inter.broker.password.file", password, "--connection.failed.authentication.delay.ms", "250"}); err != nil {
		t.Fatal(err)
	}
	sec, err := s.build(fs, "", "", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if got := newRegistryLogins(nil, sec.admin.FailedAuthDelay).delay; got != 250*time.Millisecond {
		t.Fatalf("the registry's failed logins wait %v, want the flag's 250ms", got)
	}
}
