package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// SCRAM credentials (kafka-configs.sh --entity-type users's
// SCRAM-SHA-256=[iterations=8192,password=...]) through
// AlterUserScramCredentials and DescribeUserScramCredentials. kadm salts
// the password on this side; the broker keeps only the salt, the
// iteration count and the keys derived from them, so no password crosses
// the wire or is stored. The new user's password, like the login's, comes
// from a file or the environment and never from a flag.

// The SCRAM iteration counts Kafka accepts, and the one strata uses unless
// told otherwise (Kafka's kafka-configs.sh has 4096).
const (
	minScramIterations     = 4096
	maxScramIterations     = 16384
	defaultScramIterations = 8192
)

// scramMechanismsFlag reads --mechanism: SCRAM-SHA-256, SCRAM-SHA-512 or
// both, in any case.
func scramMechanismsFlag(value string) ([]kadm.ScramMechanism, error) {
	switch strings.ToUpper(value) {
	case "BOTH":
		return []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512}, nil
	case mechanismScram256:
		return []kadm.ScramMechanism{kadm.ScramSha256}, nil
	case mechanismScram512:
		return []kadm.ScramMechanism{kadm.ScramSha512}, nil
	case mechanismPlain:
		return nil, withFix(usageError("--mechanism PLAIN has no credential of its own"), "PLAIN logins check the user's SCRAM credential: give SCRAM-SHA-256, SCRAM-SHA-512 or both")
	}
	return nil, usageError("--mechanism %q: want SCRAM-SHA-256, SCRAM-SHA-512 or both", value)
}

// checkUserName refuses an empty user name, which no login can give.
func checkUserName(name string) error {
	if strings.TrimSpace(name) == "" {
		return usageError("the user name is empty")
	}
	return nil
}

// runUserCreate is `strata user create NAME`: it sets the user's SCRAM
// credentials (creating the user, or changing its password).
func runUserCreate(ctx context.Context, e *env, args []string) error {
	var (
		client       clientFlags
		mechanism    string
		iterations   int
		passwordFile string
	)
	fs := newFlagSet(e, "user create", "NAME --password-file FILE [flags]")
	client.register(fs)
	fs.StringVar(&mechanism, "mechanism", "both", "the SCRAM `mechanism` to set a credential for: SCRAM-SHA-256, SCRAM-SHA-512 or both")
	fs.IntVar(&iterations, "iterations", defaultScramIterations, fmt.Sprintf("SCRAM iteration `count`, %d to %d", minScramIterations, maxScramIterations))
	fs.StringVar(&passwordFile, "password-file", "", "`file` holding the new user's password, trailing newline dropped; - reads it from standard input (else env STRATA_NEW_USER_PASSWORD; no flag takes the password itself, as ps would show it)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return usageError("give exactly one user name")
	}
	user := rest[0]
	if err := checkUserName(user); err != nil {
		return err
	}
	mechanisms, err := scramMechanismsFlag(mechanism)
	if err != nil {
		return err
	}
	if iterations < minScramIterations || iterations > maxScramIterations {
		return usageError("--iterations %d: Kafka takes %d to %d", iterations, minScramIterations, maxScramIterations)
	}
	password, err := newUserPassword(e.stdin, passwordFile)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()
	var upserts []kadm.UpsertSCRAM
	for _, m := range mechanisms {
		upserts = append(upserts, kadm.UpsertSCRAM{User: user, Mechanism: m, Iterations: int32(iterations), Password: password})
	}
	altered, err := admin.AlterUserSCRAMs(ctx, nil, upserts)
	if err := alteredUserError(user, altered, err); err != nil {
		return err
	}
	names := mechanismNames(mechanisms)
	if client.json {
		return printJSON(e.stdout, userDocument{User: user, Credentials: credentialsOf(mechanisms, int32(iterations))})
	}
	_, err = fmt.Fprintf(e.stdout, "user %s: %s credentials set (%d iterations)\n", user, strings.Join(names, " and "), iterations)
	return err
}

// newUserPassword reads the new user's password from file ("-" standard
// input, its first line), or else from STRATA_NEW_USER_PASSWORD.
func newUserPassword(stdin io.Reader, file string) (string, error) {
	if file == "-" {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", usageError("--password-file -: reading standard input: %v", err)
		}
		if line = strings.TrimRight(line, "\r\n"); line == "" {
			return "", usageError("--password-file -: standard input holds no password")
		}
		return line, nil
	}
	password, err := secretFrom("password-file", file, "STRATA_NEW_USER_PASSWORD")
	if err != nil {
		return "", err
	}
	if password == "" {
		return "", withFix(usageError("no password for the new user"), "give --password-file FILE (- for standard input), or set STRATA_NEW_USER_PASSWORD")
	}
	return password, nil
}

// runUserDelete is `strata user delete NAME...`: it removes the users'
// SCRAM credentials, every one they have unless --mechanism names one.
func runUserDelete(ctx context.Context, e *env, args []string) error {
	var (
		client    clientFlags
		mechanism string
	)
	fs := newFlagSet(e, "user delete", "NAME... [flags]")
	client.register(fs)
	fs.StringVar(&mechanism, "mechanism", "", "delete only this `mechanism`'s credential: SCRAM-SHA-256, SCRAM-SHA-512 or both (default: every one the user has)")
	users, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(users) == 0 {
		return usageError("give at least one user name")
	}
	for _, u := range users {
		if err := checkUserName(u); err != nil {
			return err
		}
	}
	var only []kadm.ScramMechanism
	if mechanism != "" {
		if only, err = scramMechanismsFlag(mechanism); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()
	deletes := map[string][]kadm.ScramMechanism{}
	if only != nil {
		for _, u := range users {
			deletes[u] = only
		}
	} else {
		described, err := describeUsers(ctx, admin, users)
		if err != nil {
			return err
		}
		for _, d := range described {
			for _, c := range d.CredInfos {
				deletes[d.User] = append(deletes[d.User], c.Mechanism)
			}
		}
	}
	var del []kadm.DeleteSCRAM
	for _, u := range users {
		for _, m := range deletes[u] {
			del = append(del, kadm.DeleteSCRAM{User: u, Mechanism: m})
		}
	}
	altered, err := admin.AlterUserSCRAMs(ctx, del, nil)
	var errs []error
	deleted := []userDocument{}
	for _, u := range users {
		if err := alteredUserError(u, altered, err); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, userDocument{User: u, Credentials: credentialsOf(deletes[u], 0)})
	}
	if client.json {
		if err := printJSON(e.stdout, map[string]any{"deleted": deleted}); err != nil {
			return err
		}
		return errors.Join(errs...)
	}
	for _, d := range deleted {
		var names []string
		for _, c := range d.Credentials {
			names = append(names, c.Mechanism)
		}
		if _, err := fmt.Fprintf(e.stdout, "user %s: %s credentials deleted\n", d.User, strings.Join(names, " and ")); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// runUserList is `strata user list [NAME...]`: users' SCRAM mechanisms and
// iteration counts, every user's without names.
func runUserList(ctx context.Context, e *env, args []string) error {
	var client clientFlags
	fs := newFlagSet(e, "user list", "[NAME...] [flags]")
	client.register(fs)
	users, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	for _, u := range users {
		if err := checkUserName(u); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()
	described, listErr := describeUsers(ctx, admin, users)
	if described == nil && listErr != nil {
		return listErr
	}
	out := []userDocument{}
	for _, d := range described {
		doc := userDocument{User: d.User, Credentials: []credentialDocument{}}
		for _, c := range d.CredInfos {
			doc.Credentials = append(doc.Credentials, credentialDocument{Mechanism: c.Mechanism.String(), Iterations: c.Iterations})
		}
		out = append(out, doc)
	}
	if client.json {
		if err := printJSON(e.stdout, out); err != nil {
			return err
		}
		return listErr
	}
	t := newTable(e.stdout, "USER", "MECHANISM", "ITERATIONS")
	for _, u := range out {
		for _, c := range u.Credentials {
			t.row(u.User, c.Mechanism, c.Iterations)
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	return listErr
}

// describeUsers describes users (every user when none are named), in
// order; a named user without credentials is an error, returned joined
// with the others after the users that were found.
func describeUsers(ctx context.Context, admin *kadm.Client, users []string) ([]kadm.DescribedUserSCRAM, error) {
	described, err := admin.DescribeUserSCRAMs(ctx, users...)
	if err != nil {
		return nil, withClusterRightsFix(kafkaError("describing users", err, ""), "users")
	}
	var out []kadm.DescribedUserSCRAM
	var errs []error
	for _, d := range described.Sorted() {
		switch {
		case errors.Is(d.Err, kerr.ResourceNotFound):
			errs = append(errs, withFix(fmt.Errorf("user %q has no SCRAM credentials", d.User), "`strata user list` lists the users; `strata user create` makes one"))
		case d.Err != nil:
			errs = append(errs, kafkaError(fmt.Sprintf("user %q", d.User), d.Err, d.ErrMessage))
		default:
			slices.SortFunc(d.CredInfos, func(a, b kadm.CredInfo) int { return int(a.Mechanism) - int(b.Mechanism) })
			out = append(out, d)
		}
	}
	return out, errors.Join(errs...)
}

// alteredUserError is user's outcome in an AlterUserScramCredentials
// answer (err is the request's own error).
func alteredUserError(user string, altered kadm.AlteredUserSCRAMs, err error) error {
	if err != nil {
		return withClusterRightsFix(kafkaError(fmt.Sprintf("user %q", user), err, ""), "users")
	}
	a, ok := altered[user]
	switch {
	case !ok:
		return nil // nothing was asked for the user
	case errors.Is(a.Err, kerr.ResourceNotFound):
		return withFix(fmt.Errorf("user %q has no such SCRAM credential to delete", user), "`strata user list` shows the users' mechanisms")
	case a.Err != nil:
		return withClusterRightsFix(kafkaError(fmt.Sprintf("user %q", user), a.Err, a.ErrMessage), "users")
	}
	return nil
}

// userDocument is one user as `strata user list --json` prints it.
type userDocument struct {
	User        string               `json:"user"`
	Credentials []credentialDocument `json:"credentials"`
}

type credentialDocument struct {
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations,omitempty"`
}

func credentialsOf(mechanisms []kadm.ScramMechanism, iterations int32) []credentialDocument {
	out := []credentialDocument{}
	for _, m := range mechanisms {
		out = append(out, credentialDocument{Mechanism: m.String(), Iterations: iterations})
	}
	return out
}

func mechanismNames(mechanisms []kadm.ScramMechanism) []string {
	var out []string
	for _, m := range mechanisms {
		out = append(out, m.String())
	}
	return out
}
