package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// runTopicCreate is `strata topic create NAME`.
func runTopicCreate(ctx context.Context, e *env, args []string) error {
	var (
		client            clientFlags
		partitions        int
		replicationFactor int
		configs           keyValues
		validateOnly      bool
	)
	fs := newFlagSet(e, "topic create", "NAME [flags]")
	client.register(fs)
	fs.IntVar(&partitions, "partitions", -1, "number of partitions (-1: the broker's num.partitions)")
	fs.IntVar(&replicationFactor, "replication-factor", -1, "replicas per partition (-1: the broker's default)")
	fs.Var(&configs, "config", "topic config `name=value`, Kafka's names (repeatable)")
	fs.BoolVar(&validateOnly, "validate-only", false, "check the request without creating the topic")
	names, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(names) != 1 {
		return usageError("give exactly one topic name")
	}
	if err := checkTopicName("topic", names[0]); err != nil {
		return err
	}
	partitions32, err := int32Flag("partitions", partitions)
	if err != nil {
		return err
	}
	if partitions32 < 1 && partitions32 != -1 {
		return usageError("--partitions %d: a topic needs at least 1 partition (or -1 for the broker's num.partitions)", partitions)
	}
	factor16, err := int16Flag("replication-factor", replicationFactor)
	if err != nil {
		return err
	}
	if factor16 < 1 && factor16 != -1 {
		return usageError("--replication-factor %d: want at least 1 (or -1 for the broker's default)", replicationFactor)
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()

	set := make(map[string]*string, len(configs.values))
	for name, value := range configs.values {
		set[name] = &value
	}
	create := admin.CreateTopics
	if validateOnly {
		create = admin.ValidateCreateTopics
	}
	responses, err := create(ctx, partitions32, factor16, set, names[0])
	if err != nil {
		return err
	}
	r, err := responses.On(names[0], nil)
	if err != nil {
		return err
	}
	if errors.Is(r.Err, kerr.InvalidPartitions) {
		// The table's fix is alter's; a new topic's count has no current
		// one to exceed.
		return withFix(kafkaError(fmt.Sprintf("topic %q", r.Topic), r.Err, r.ErrMessage), "the broker's message says which counts it takes; give one with --partitions")
	}
	if r.Err != nil {
		return kafkaError(fmt.Sprintf("topic %q", r.Topic), r.Err, r.ErrMessage)
	}
	if client.json {
		return printJSON(e.stdout, createdTopicJSON(r, validateOnly))
	}
	verb := "created"
	if validateOnly {
		verb = "would create"
	}
	_, err = fmt.Fprintf(e.stdout, "%s topic %s (id %s, %d partitions, replication factor %d)\n", verb, r.Topic, topicID(r.ID), r.NumPartitions, r.ReplicationFactor)
	return err
}

type createdTopic struct {
	Topic             string `json:"topic"`
	ID                string `json:"id"`
	Partitions        int32  `json:"partitions"`
	ReplicationFactor int16  `json:"replication_factor"`
	ValidateOnly      bool   `json:"validate_only"`
}

func createdTopicJSON(r kadm.CreateTopicResponse, validateOnly bool) createdTopic {
	return createdTopic{Topic: r.Topic, ID: topicID(r.ID), Partitions: r.NumPartitions, ReplicationFactor: r.ReplicationFactor, ValidateOnly: validateOnly}
}
