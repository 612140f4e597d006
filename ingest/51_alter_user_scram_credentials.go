package ingest

// AlterUserScramCredentials: v0
//
// Behavior:
//   - Needs Alter on the cluster (else CLUSTER_AUTHORIZATION_FAILED for
//     every user). Upsertions carry the salted password (the client salts
//     it): the broker derives StoredKey and ServerKey (package sasl) and
//     stores those with the salt and iteration count, never the salted
//     password. Each user's changes are one metadata command, answered
//     per user: a user with a mechanism named twice is DUPLICATE_RESOURCE,
//     an unknown mechanism UNSUPPORTED_SASL_MECHANISM, iterations outside
//     4096 to 16384 or an empty name, salt or password
//     UNACCEPTABLE_CREDENTIAL, deleting a credential that does not exist
//     RESOURCE_NOT_FOUND; a refused user changes nothing.
//
// Version notes:
//   - v0 is flexible.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/sasl"
)

func init() { register(0, 0, handleAlterUserScramCredentials) }

func handleAlterUserScramCredentials(ctx context.Context, b *Broker, r *request, req *kmsg.AlterUserSCRAMCredentialsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	authorized := b.authorizeCluster(r, acl.OpAlter)
	changes := map[string]*meta.AlterScramCredential{}
	failed := map[string]error{}
	var users []string
	change := func(user string) *meta.AlterScramCredential {
		c, ok := changes[user]
		if !ok {
			c = &meta.AlterScramCredential{User: user}
			changes[user] = c
			users = append(users, user)
		}
		return c
	}
	named := map[string]bool{}
	mechanism := func(user string, code int8) (string, bool) {
		m, ok := scramMechanisms[code]
		switch {
		case !ok:
			failed[user] = fmt.Errorf("%w: mechanism code %d: want 1 (%s) or 2 (%s)", ErrUnsupportedSASLMechanism, code, sasl.ScramSHA256, sasl.ScramSHA512)
		case named[user+"\x00"+m]:
			failed[user] = fmt.Errorf("%w: user %q's %s credential changed twice", ErrDuplicateResource, user, m)
		}
		named[user+"\x00"+m] = true
		return m, ok && failed[user] == nil
	}
	for _, d := range req.Deletions {
		c := change(d.Name)
		if m, ok := mechanism(d.Name, d.Mechanism); ok {
			c.Delete = append(c.Delete, m)
		}
	}
	for _, u := range req.Upsertions {
		c := change(u.Name)
		m, ok := mechanism(u.Name, u.Mechanism)
		if !ok {
			continue
		}
		cred, err := sasl.NewCredential(m, u.SaltedPassword, u.Salt, int(u.Iterations))
		if err != nil {
			failed[u.Name] = err
			continue
		}
		c.Upsert = append(c.Upsert, cred)
	}
	for _, user := range users {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = user
		err := failed[user]
		switch {
		case !authorized:
			err = ErrClusterAuthorization
		case err == nil:
			if _, err = b.meta.Propose(ctx, changes[user]); err == nil {
				b.log.Info("SCRAM credentials changed", "user", user, "by", principalOf(r))
			}
		}
		res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Results = append(resp.Results, res)
	}
	return replyWith(resp), nil
}
