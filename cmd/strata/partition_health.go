package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Replication health, as Kafka's tools judge it from a Metadata answer
// (kafka-topics.sh --describe with --under-replicated-partitions,
// --unavailable-partitions, --under-min-isr-partitions and
// --at-min-isr-partitions). `strata topic list` lists the partitions one
// report keeps and `strata cluster status` counts the first three (at min
// ISR is no alarm: a one-replica topic is always there), both through
// healthOf, so the list and the count cannot disagree on a rule:
//
//	under-replicated  the ISR is smaller than the replica set
//	unavailable       no leader (-1, LEADER_NOT_AVAILABLE), or a leader
//	                  that is not among Metadata's brokers, which are the
//	                  live ones
//	under min ISR     no leader, or an ISR smaller than the topic's
//	                  min.insync.replicas: acks=all produces are refused
//	at min ISR        an ISR exactly min.insync.replicas: one more lost
//	                  replica and acks=all produces are refused
//
// The internal topic __consumer_offsets is left out, as `strata topic
// list` leaves it out: the brokers answer for it and store nothing in it.

// partitionHealth is one partition as Metadata reports it, with the
// topic's min.insync.replicas when it was asked for.
type partitionHealth struct {
	Topic string `json:"topic"`
	partitionReplication
	// MinInsyncReplicas is the topic's min.insync.replicas, 0 when not
	// asked for (left out of the JSON then).
	MinInsyncReplicas int `json:"min_insync_replicas,omitempty"`

	// leaderLive is whether the leader is one of Metadata's brokers.
	leaderLive bool
}

func (p partitionHealth) underReplicated() bool { return len(p.ISR) < len(p.Replicas) }

func (p partitionHealth) unavailable() bool { return p.Leader < 0 || !p.leaderLive }

func (p partitionHealth) underMinISR() bool {
	return p.Leader < 0 || (p.MinInsyncReplicas > 0 && len(p.ISR) < p.MinInsyncReplicas)
}

func (p partitionHealth) atMinISR() bool {
	return p.MinInsyncReplicas > 0 && len(p.ISR) == p.MinInsyncReplicas
}

// healthReport is one of the reports `strata topic list` can print
// instead of the topics.
type healthReport struct {
	flag  string // the topic list flag that asks for it
	usage string
	keeps func(partitionHealth) bool
	// needsMinISR is whether the report reads min.insync.replicas, which
	// costs a DescribeConfigs request.
	needsMinISR bool
}

// healthReports are the reports, in the order help lists them.
var healthReports = []healthReport{
	{"under-replicated", "list the partitions whose ISR is smaller than their replica set (kafka-topics.sh --under-replicated-partitions)", partitionHealth.underReplicated, false},
	{"unavailable", "list the partitions with no leader, or a leader that is not live (kafka-topics.sh --unavailable-partitions)", partitionHealth.unavailable, false},
	{"under-min-isr", "list the partitions with no leader or an ISR smaller than the topic's min.insync.replicas, which refuse acks=all produces (kafka-topics.sh --under-min-isr-partitions)", partitionHealth.underMinISR, true},
	{"at-min-isr", "list the partitions whose ISR is exactly the topic's min.insync.replicas, one lost replica from refusing acks=all produces; a one-replica topic's always are (kafka-topics.sh --at-min-isr-partitions)", partitionHealth.atMinISR, true},
}

// healthOf is every partition of the non-internal topics in m, sorted by
// topic and partition, with its topic's min.insync.replicas from minISR
// (nil when not asked for). A topic Metadata could not describe is an
// error.
func healthOf(m kadm.Metadata, minISR map[string]int) ([]partitionHealth, error) {
	live := map[int32]bool{}
	for _, b := range m.Brokers {
		live[b.NodeID] = true
	}
	var out []partitionHealth
	for _, t := range m.Topics.Sorted() {
		if t.IsInternal {
			continue
		}
		if t.Err != nil {
			return nil, kafkaError("topic "+t.Topic, t.Err, "")
		}
		for _, p := range t.Partitions.Sorted() {
			h := partitionHealth{
				Topic: t.Topic, partitionReplication: replicationOf(p),
				MinInsyncReplicas: minISR[t.Topic],
				leaderLive:        p.Leader >= 0 && live[p.Leader] && !errors.Is(p.Err, kerr.LeaderNotAvailable),
			}
			out = append(out, h)
		}
	}
	return out, nil
}

// healthCounts is how many partitions the reports that mean trouble keep,
// for `strata cluster status`.
type healthCounts struct {
	Partitions      int `json:"partitions"`
	UnderReplicated int `json:"under_replicated"`
	UnderMinISR     int `json:"under_min_isr"`
	Unavailable     int `json:"unavailable"`
}

func countHealth(partitions []partitionHealth) healthCounts {
	c := healthCounts{Partitions: len(partitions)}
	for _, p := range partitions {
		if p.underReplicated() {
			c.UnderReplicated++
		}
		if p.underMinISR() {
			c.UnderMinISR++
		}
		if p.unavailable() {
			c.Unavailable++
		}
	}
	return c
}

// minInsyncReplicas asks for the topics' min.insync.replicas in one
// DescribeConfigs request. A topic deleted since the Metadata answer is
// left out.
func minInsyncReplicas(ctx context.Context, admin *kadm.Client, topics kadm.TopicDetails) (map[string]int, error) {
	var names []string
	for name, t := range topics {
		if !t.IsInternal && t.Err == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	configs, err := admin.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("min.insync.replicas of the topics: %w", err)
	}
	out := make(map[string]int, len(names))
	for _, rc := range configs {
		if errors.Is(rc.Err, kerr.UnknownTopicOrPartition) {
			continue
		}
		if rc.Err != nil {
			return nil, kafkaError(fmt.Sprintf("topic %q configs", rc.Name), rc.Err, rc.ErrMessage)
		}
		for _, c := range rc.Configs {
			if c.Key != "min.insync.replicas" {
				continue
			}
			n, err := strconv.Atoi(c.MaybeValue())
			if err != nil || n < 1 {
				return nil, fmt.Errorf("topic %q: min.insync.replicas %q from the broker is not a count", rc.Name, c.MaybeValue())
			}
			out[rc.Name] = n
		}
		if _, ok := out[rc.Name]; !ok {
			return nil, fmt.Errorf("topic %q: the broker's configs have no min.insync.replicas", rc.Name)
		}
	}
	return out, nil
}
