package main

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A broker's message replaces the code's generic description, and the
// code still matches, so the fix table finds its hint.
func TestKafkaErrorWithTheBrokersMessage(t *testing.T) {
	t.Parallel()
	err := kafkaError(`topic "big"`, kerr.InvalidReplicationFactor, "3 replicas with 1 live brokers")
	if got, want := err.Error(), `topic "big": INVALID_REPLICATION_FACTOR: 3 replicas with 1 live brokers`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Error("the code does not match")
	}
	if _, fix := explainParts(err); fix == "" {
		t.Error("no hint for INVALID_REPLICATION_FACTOR")
	}
	bare := kafkaError(`topic "big"`, kerr.InvalidReplicationFactor, "")
	if got, want := bare.Error(), `topic "big": `+kerr.InvalidReplicationFactor.Error(); got != want {
		t.Errorf("without a message: got %q, want %q", got, want)
	}
}
