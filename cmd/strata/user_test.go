package main

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestUserCommandLinesRefused: user commands refuse what the broker would
// (iterations out of Kafka's range, an unknown mechanism) and a new user
// without a password, before anything is sent.
func TestUserCommandLinesRefused(t *testing.T) {
	clearSecurityEnv(t)
	dir := t.TempDir()
	password := writeFile(t, dir, "password", "s3cret\n")
	nowhere := []string{"--bootstrap", "127.0.0.1:1", "--timeout", "1s"}
	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"create", "alice"}, "", "no password for the new user (give --password-file FILE (- for standard input), or set STRATA_NEW_USER_PASSWORD)"},
		{[]string{"create", "alice", "--password-file", "-"}, "", "--password-file -: standard input holds no password"},
		{[]string{"create", "alice", "--password-file", dir + "/missing"}, "", "--password-file: open " + dir + "/missing: no such file or directory"},
		{[]string{"create", "alice", "--password-file", password, "--iterations", "1000"}, "", "--iterations 1000: Kafka takes 4096 to 16384"},
		{[]string{"create", "alice", "--password-file", password, "--iterations", "20000"}, "", "--iterations 20000: Kafka takes 4096 to 16384"},
		{[]string{"create", "alice", "--password-file", password, "--mechanism", "SCRAM-SHA-1"}, "", `--mechanism "SCRAM-SHA-1": want SCRAM-SHA-256, SCRAM-SHA-512 or both`},
		{[]string{"create", "alice", "--password-file", password, "--mechanism", "PLAIN"}, "", "--mechanism PLAIN has no credential of its own"},
		{[]string{"create", "--password-file", password}, "", "give exactly one user name"},
		{[]string{"create", "alice", "bob", "--password-file", password}, "", "give exactly one user name"},
		{[]string{"create", " ", "--password-file", password}, "", "the user name is empty"},
		{[]string{"delete"}, "", "give at least one user name"},
		{[]string{"delete", "alice", "--mechanism", "md5"}, "", `--mechanism "md5": want SCRAM-SHA-256, SCRAM-SHA-512 or both`},
		{[]string{"list", ""}, "", "the user name is empty"},
	} {
		args := append(append([]string{"user"}, tc.args...), nowhere...)
		code, stdout, stderr := runCLI(t, tc.stdin, args...)
		if code != exitBadArgs || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("strata %s: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", strings.Join(args, " "), code, stdout, stderr, tc.want)
		}
	}
}

// TestNewUserPasswordSources: a file (trailing newline dropped), standard
// input's first line with -, or STRATA_NEW_USER_PASSWORD; the file wins.
func TestNewUserPasswordSources(t *testing.T) {
	clearSecurityEnv(t)
	file := writeFile(t, t.TempDir(), "password", "from-file\n")
	t.Setenv("STRATA_NEW_USER_PASSWORD", "from-env")
	for _, tc := range []struct {
		file, stdin, want string
	}{
		{file, "", "from-file"},
		{"-", "from-stdin\nsecond line\n", "from-stdin"},
		{"-", "no newline", "no newline"},
		{"", "", "from-env"},
	} {
		got, err := newUserPassword(strings.NewReader(tc.stdin), tc.file)
		if err != nil || got != tc.want {
			t.Errorf("file %q, stdin %q: %q, %v; want %q", tc.file, tc.stdin, got, err, tc.want)
		}
	}
}

// TestScramMechanismsFlag: both (the default) is the two SCRAM
// mechanisms; names match in any case.
func TestScramMechanismsFlag(t *testing.T) {
	t.Parallel()
	for value, want := range map[string][]kadm.ScramMechanism{
		"both":          {kadm.ScramSha256, kadm.ScramSha512},
		"BOTH":          {kadm.ScramSha256, kadm.ScramSha512},
		"scram-sha-256": {kadm.ScramSha256},
		"SCRAM-SHA-512": {kadm.ScramSha512},
	} {
		got, err := scramMechanismsFlag(value)
		if err != nil || len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] {
			t.Errorf("--mechanism %s: %v, %v; want %v", value, got, err, want)
		}
	}
}
