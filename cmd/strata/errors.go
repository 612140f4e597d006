package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fixes maps the failures a user can do something about to what to do.
var fixes = []struct {
	err error
	fix string
}{
	{syscall.ECONNREFUSED, "start a broker with `strata server`, or point --bootstrap at a running one"},
	{context.DeadlineExceeded, "check that the broker is up and --bootstrap is right, or raise --timeout"},
	{kerr.TopicAlreadyExists, "pick another name, or delete the topic first with `strata topic delete`"},
	{kerr.UnknownTopicOrPartition, "`strata topic list` shows the topics; create it with `strata topic create`"},
	{kerr.UnknownTopicID, "`strata topic list` shows the topics; create it with `strata topic create`"},
	{kerr.InvalidConfig, "use Kafka's topic config names and units (e.g. retention.ms=86400000)"},
	{kerr.InvalidPartitions, "give a partition count above the current one; `strata topic describe` shows it"},
	{kerr.InvalidReplicationFactor, "use a --replication-factor no larger than the live brokers (`strata cluster status` lists them), or leave it out for the broker's default"},
	{kerr.InvalidTopicException, "topic names use letters, digits, '.', '_' and '-', at most 249 characters, and may not match another topic's once '.' reads as '_'"},
	{kerr.MessageTooLarge, "raise the topic's max.message.bytes, or produce smaller records"},
	{kerr.PolicyViolation, "the broker refused the change; see its message above"},
	{kerr.TopicAuthorizationFailed, "your principal has no ACL allowing this on the topic; an admin can grant it with `strata acl create --allow User:NAME --operation OP --topic T` (`strata acl list --topic T` shows what is granted)"},
	{kerr.GroupAuthorizationFailed, "your principal may not use this consumer group; an admin can grant Read with `strata acl create --allow User:NAME --operation READ --group G`"},
	{kerr.ClusterAuthorizationFailed, "this needs an ACL on the cluster (or a super user); an admin can grant it with `strata acl create --allow User:NAME --operation OP --cluster`"},
}

// explain renders err as one line that names the problem and, when known,
// the fix.
func explain(err error) string {
	problem, fix := explainParts(err)
	if fix == "" {
		return problem
	}
	return problem + " (" + fix + ")"
}

// explainParts is explain's problem, on one line, and fix ("" when none is
// known) apart, for --json errors.
func explainParts(err error) (problem, fix string) {
	problem = strings.Join(strings.Fields(err.Error()), " ")
	if fix, ok := fixOf(err); ok {
		return problem, fix
	}
	for _, f := range fixes {
		if errors.Is(err, f.err) {
			return problem, f.fix
		}
	}
	return problem, ""
}

// kafkaError joins a Kafka error code with the broker's message about it.
// With a message, the code's name stands before it and its generic
// description is left out: the broker's words are the specific ones.
func kafkaError(what string, err error, message string) error {
	if message == "" {
		return fmt.Errorf("%s: %w", what, err)
	}
	return &brokerError{what: what, code: err, message: message}
}

// brokerError is a Kafka error code with the broker's message; it matches
// the code with errors.Is.
type brokerError struct {
	what    string
	code    error
	message string
}

func (e *brokerError) Error() string {
	name := e.code.Error()
	var ke *kerr.Error
	if errors.As(e.code, &ke) {
		name = ke.Message
	}
	return e.what + ": " + name + ": " + e.message
}

func (e *brokerError) Unwrap() error { return e.code }
