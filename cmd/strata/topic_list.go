package main

import "context"

// runTopicList is `strata topic list`.
func runTopicList(ctx context.Context, e *env, args []string) error {
	var client clientFlags
	fs := newFlagSet(e, "topic list", "[flags]")
	client.register(fs)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError("topic list takes no arguments")
	}
	ctx, cancel := context.WithTimeout(ctx, client.timeout)
	defer cancel()
	admin, closeAdmin, err := newAdmin(ctx, &client)
	if err != nil {
		return err
	}
	defer closeAdmin()
	topics, err := admin.ListTopics(ctx)
	if err != nil {
		return err
	}
	type listed struct {
		Topic             string `json:"topic"`
		ID                string `json:"id"`
		Partitions        int    `json:"partitions"`
		ReplicationFactor int    `json:"replication_factor"`
	}
	out := make([]listed, 0, len(topics))
	for _, t := range topics.Sorted() {
		if t.Err != nil {
			return kafkaError("topic "+t.Topic, t.Err, "")
		}
		out = append(out, listed{Topic: t.Topic, ID: topicID(t.ID), Partitions: len(t.Partitions), ReplicationFactor: t.Partitions.NumReplicas()})
	}
	if client.json {
		return printJSON(e.stdout, out)
	}
	tw := newTable(e.stdout, "TOPIC", "ID", "PARTITIONS", "REPLICATION")
	for _, t := range out {
		tw.row(t.Topic, t.ID, t.Partitions, t.ReplicationFactor)
	}
	return tw.flush()
}
