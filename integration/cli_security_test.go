package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestCLISecurity drives a secured server (one SASL_SSL listener, the
// admin address over TLS with a token) with the strata CLI alone: the
// broker user creates a SCRAM user and grants it ACLs, the user produces
// and consumes, a wrong password is refused with the login-failed line,
// the admin commands reach the TLS address with the token, and deleting
// the ACL refuses the user again. No command line holds a password.
func TestCLISecurity(t *testing.T) {
	t.Parallel()
	srv, sec := startSecureServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	alicePassword := "alice-secret-" + fmt.Sprint(time.Now().UnixNano())
	aliceFile := sec.write(t, "alice.password", alicePassword)
	wrongFile := sec.write(t, "wrong.password", "not-"+alicePassword)
	secrets := []string{sec.adminPassword, alicePassword, "not-" + alicePassword, sec.adminToken}
	asBroker := []string{"--tls-ca", sec.pki.CAFile, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", sec.adminUser, "--sasl-password-file", sec.passwordFile}
	asAlice := []string{"--tls-ca", sec.pki.CAFile, "--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", "alice", "--sasl-password-file", aliceFile}

	// Every command line is what ps shows: none may hold a secret.
	argv := func(args []string, as []string) []string {
		t.Helper()
		all := append(slices.Clone(args), as...)
		for _, a := range all {
			for _, secret := range secrets {
				if strings.Contains(a, secret) {
					t.Fatalf("strata %s: an argument holds a secret", strings.Join(all, " "))
				}
			}
		}
		return all
	}
	run := func(stdin string, as []string, args ...string) string {
		t.Helper()
		out, err := srv.strata(ctx, stdin, argv(args, as)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	refused := func(stdin string, as []string, args ...string) cliResult {
		t.Helper()
		r := srv.strataExit(ctx, stdin, argv(args, as)...)
		if r.code == 0 {
			t.Fatalf("strata %s: exit 0, want a failure; stdout %q", strings.Join(args, " "), r.stdout)
		}
		if strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("strata %s: stderr is not one line: %q", strings.Join(args, " "), r.stderr)
		}
		return r
	}

	run("", asBroker, "topic", "create", "logs-app")
	if out := run("", asBroker, "user", "create", "alice", "--password-file", aliceFile); !strings.Contains(out, "SCRAM-SHA-256 and SCRAM-SHA-512 credentials set (8192 iterations)") {
		t.Fatalf("user create: %q", out)
	}
	var users []listedUser
	if err := json.Unmarshal([]byte(run("", asBroker, "user", "list", "--json")), &users); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(users, func(u listedUser) bool { return u.User == "alice" })
	if i < 0 || len(users[i].Credentials) != 2 || users[i].Credentials[0].Mechanism != "SCRAM-SHA-256" ||
		users[i].Credentials[1].Mechanism != "SCRAM-SHA-512" || users[i].Credentials[0].Iterations != 8192 {
		t.Fatalf("user list --json: %+v, want alice with SCRAM-SHA-256 and SCRAM-SHA-512 at 8192 iterations", users)
	}
	if out := run("", asBroker, "user", "list", "alice"); !strings.Contains(out, "USER") || !strings.Contains(out, "alice") {
		t.Fatalf("user list alice:\n%s", out)
	}

	// Without an ACL alice may log in, and do nothing.
	if r := refused("one\n", asAlice, "produce", "logs-app"); !strings.Contains(r.stderr, "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("produce without an ACL: %+v", r)
	}

	run("", asBroker, "acl", "create", "--allow", "User:alice", "--operation", "Write,Read", "--topic", "logs-", "--prefixed")
	run("", asBroker, "acl", "create", "--allow", "User:alice", "--operation", "read", "--group", "logs-readers")
	listed := run("", asBroker, "acl", "list")
	for _, want := range []string{
		"Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=logs-, patternType=PREFIXED)`:\n",
		"\t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)\n",
		"\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n",
		"Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=logs-readers, patternType=LITERAL)`:\n",
	} {
		if !strings.Contains(listed, want) {
			t.Fatalf("acl list does not show %q:\n%s", want, listed)
		}
	}
	var bindings []map[string]string
	if err := json.Unmarshal([]byte(run("", asBroker, "acl", "list", "--json", "--principal", "User:alice", "--topic", "logs-")), &bindings); err != nil || len(bindings) != 2 {
		t.Fatalf("acl list --json --topic logs-: %v %v, want the two prefixed bindings", err, bindings)
	}

	run("one\ntwo\n", asAlice, "produce", "logs-app")
	if out := run("", asAlice, "consume", "logs-app"); out != "one\ntwo\n" {
		t.Fatalf("alice consumed %q", out)
	}

	t.Run("a wrong password is the login-failed line", func(t *testing.T) {
		wrong := slices.Clone(asAlice)
		wrong[len(wrong)-1] = wrongFile
		r := refused("", wrong, "consume", "logs-app")
		if r.code != 1 || !strings.HasPrefix(r.stderr, `strata consume: login failed: `+srv.kafka+` refused user "alice" with SCRAM-SHA-256 (check the user (--sasl-user), the password`) ||
			strings.Contains(r.stderr, "SASL_AUTHENTICATION_FAILED") {
			t.Fatalf("wrong password: exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("no login at all says what the listener may want", func(t *testing.T) {
		r := refused("", []string{"--tls-ca", sec.pki.CAFile, "--timeout", "5s"}, "topic", "list")
		if !strings.Contains(r.stderr, "log in with --sasl-mechanism and --sasl-user") {
			t.Fatalf("no login: exit %d, stderr %q", r.code, r.stderr)
		}
	})

	t.Run("admin commands reach the TLS address with the token", func(t *testing.T) {
		withToken := append(slices.Clone(asBroker), "--admin-token-file", sec.adminTokenFile)
		if out := run("", withToken, "cluster", "status"); !strings.Contains(out, "BROKER") || !strings.Contains(out, "0 unavailable") {
			t.Fatalf("cluster status:\n%s", out)
		}
		if out := run("", withToken, "topic", "describe", "logs-app", "--json"); !strings.Contains(out, `"tiered_bytes": 0`) {
			t.Fatalf("topic describe (tiered sizes from the admin address):\n%s", out)
		}
		// Commands that talk to the admin address alone take its TLS flags.
		adminOnly := []string{"--tls-ca", sec.pki.CAFile, "--admin-token-file", sec.adminTokenFile}
		if out := run("", adminOnly, "tier", "status", "logs-app", "--json"); !strings.Contains(out, `"topic": "logs-app"`) {
			t.Fatalf("tier status:\n%s", out)
		}
		if out := run("", adminOnly, "broker", "undrain", "1"); !strings.Contains(out, "broker 1 takes replicas again") {
			t.Fatalf("broker undrain: %q", out)
		}
		commit := kadm.Offsets{}
		commit.Add(kadm.Offset{Topic: "logs-app", Partition: 0, At: 1, LeaderEpoch: -1})
		if resp, err := sec.admin(t, []string{srv.kafka}).CommitOffsets(ctx, "logs-readers", commit); err != nil || resp.Error() != nil {
			t.Fatalf("commit: %v %v", err, resp.Error())
		}
		var groups []struct {
			Partitions []struct {
				LagRecords int64 `json:"lag_records"`
			} `json:"partitions"`
		}
		if err := json.Unmarshal([]byte(run("", withToken, "group", "describe", "logs-readers", "--json")), &groups); err != nil ||
			len(groups) != 1 || len(groups[0].Partitions) != 1 || groups[0].Partitions[0].LagRecords != 1 {
			t.Fatalf("group describe (lag from the admin address): %v %+v", err, groups)
		}

		if r := refused("", asBroker, "cluster", "status"); !strings.Contains(r.stderr, "asks for a credential") || !strings.Contains(r.stderr, "--admin-token-file") {
			t.Fatalf("cluster status without the token: %+v", r)
		}
		wrongToken := sec.write(t, "wrong.token", "not-"+sec.adminToken)
		if r := refused("", []string{"--tls-ca", sec.pki.CAFile, "--admin-token-file", wrongToken}, "tier", "status"); !strings.Contains(r.stderr, "refused the token") {
			t.Fatalf("tier status with a wrong token: %+v", r)
		}
		if r := refused("", []string{"--admin-token-file", sec.adminTokenFile}, "tier", "status"); !strings.Contains(r.stderr, "serves HTTPS") || !strings.Contains(r.stderr, "--tls-ca") {
			t.Fatalf("tier status over plain HTTP: %+v", r)
		}
	})

	if r := refused("", asBroker, "acl", "delete"); r.code != 2 || !strings.Contains(r.stderr, "--all") {
		t.Fatalf("acl delete without a filter: %+v", r)
	}
	deleted := run("", asBroker, "acl", "delete", "--principal", "User:alice", "--topic", "logs-", "--prefixed")
	if !strings.Contains(deleted, "Deleted ACLs for resource `ResourcePattern(resourceType=TOPIC, name=logs-, patternType=PREFIXED)`:") ||
		strings.Count(deleted, "principal=User:alice") != 2 {
		t.Fatalf("acl delete printed:\n%s", deleted)
	}
	if r := refused("three\n", asAlice, "produce", "logs-app"); !strings.Contains(r.stderr, "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("produce once the ACL is deleted: %+v", r)
	}
	if strings.Contains(srv.log.String(), alicePassword) {
		t.Error("alice's password reached the server's log")
	}
}

// listedUser is one user of `strata user list --json`.
type listedUser struct {
	User        string `json:"user"`
	Credentials []struct {
		Mechanism  string `json:"mechanism"`
		Iterations int32  `json:"iterations"`
	} `json:"credentials"`
}
