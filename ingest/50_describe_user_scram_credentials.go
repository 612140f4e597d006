package ingest

// DescribeUserScramCredentials: v0
//
// Behavior:
//   - Needs Describe on the cluster (else CLUSTER_AUTHORIZATION_FAILED).
//     Lists each user's SCRAM mechanisms and iteration counts (never salts
//     or keys): every user with a credential when Users is null, else the
//     users named, RESOURCE_NOT_FOUND for one without a credential and
//     DUPLICATE_RESOURCE for one named twice.
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

func init() { register(0, 0, handleDescribeUserScramCredentials) }

// scramMechanisms are Kafka's codes of the SCRAM mechanisms (ScramMechanism).
var scramMechanisms = map[int8]string{1: sasl.ScramSHA256, 2: sasl.ScramSHA512}

// scramCode is the code of a SCRAM mechanism's name.
func scramCode(mechanism string) int8 {
	for code, name := range scramMechanisms {
		if name == mechanism {
			return code
		}
	}
	return 0
}

func handleDescribeUserScramCredentials(_ context.Context, b *Broker, r *request, req *kmsg.DescribeUserSCRAMCredentialsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !b.authorizeCluster(r, acl.OpDescribe) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(ErrClusterAuthorization), errorMessage(ErrClusterAuthorization)
		return replyWith(resp), nil
	}
	byUser := map[string][]meta.UserCredential{}
	var users []string
	for _, c := range b.meta.State().ScramCredentials() {
		if _, ok := byUser[c.User]; !ok {
			users = append(users, c.User)
		}
		byUser[c.User] = append(byUser[c.User], c)
	}
	if req.Users != nil {
		users = users[:0]
		for _, u := range req.Users {
			users = append(users, u.Name)
		}
	}
	named := map[string]int{}
	for _, u := range users {
		named[u]++
	}
	answered := map[string]bool{}
	for _, u := range users {
		if answered[u] {
			continue
		}
		answered[u] = true
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = u
		switch {
		case named[u] > 1:
			err := fmt.Errorf("%w: user %q named more than once", ErrDuplicateResource, u)
			res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
		case len(byUser[u]) == 0:
			err := fmt.Errorf("%w: user %q has no SCRAM credential", meta.ErrCredentialNotFound, u)
			res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
		default:
			for _, c := range byUser[u] {
				info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				info.Mechanism, info.Iterations = scramCode(c.Mechanism), int32(c.Iterations)
				res.CredentialInfos = append(res.CredentialInfos, info)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return replyWith(resp), nil
}
