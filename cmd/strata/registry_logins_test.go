package main

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/sasl"
)

// TestRegistryLogins: a password checked is taken again without another
// PBKDF2 (here with every check slot taken, where a check would wait),
// until the user's credential changes; checks beyond the slots wait for
// one; and a failed login counts against its host, whose next failure
// waits twice as long.
func TestRegistryLogins(t *testing.T) {
	t.Parallel()
	node := startMetaNode(t)
	setPassword := func(password string) {
		t.Helper()
		cred, err := sasl.FromPassword(sasl.ScramSHA512, password, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := node.Propose(t.Context(), &meta.AlterScramCredential{User: "alice", Upsert: []sasl.Credential{cred}}); err != nil {
			t.Fatal(err)
		}
	}
	setPassword("first")
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
	setPassword("second")
	if logins.check(t.Context(), host, "alice", "first") {
		t.Fatal("alice's old password taken after her credential changed")
	}
	if !logins.check(t.Context(), host, "alice", "second") {
		t.Fatal("alice's new password refused")
	}
	// One failure above (the old password) counted against the host.
	if d := logins.failures.Delay(host, time.Second); d != 2*time.Second {
		t.Fatalf("the host's next failure waits %v, want 2s: its failed login was not counted", d)
	}
}
