package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestReplicatedClientRoundTrips runs the kcat, kafkajs, sarama and
// franz-go round trips against one three-broker cluster, each client
// bootstrapped from all three brokers and producing with acks=all to a
// topic of its own with three partitions, RF 3 and min.insync.replicas 2,
// created once every partition has a leader and a full ISR. After each
// round trip every broker must hold every partition up to the records the
// client wrote, with its high watermark there too.
func TestReplicatedClientRoundTrips(t *testing.T) {
	t.Parallel()
	servers := startCluster(t, 3)
	admin := kadm.NewClient(newClientSeeds(t, kafkaAddresses(servers)))
	const partitions = 3
	for _, client := range []struct {
		name      string
		roundTrip func(t *testing.T, topic string) []testRecord
	}{
		{"kcat", func(t *testing.T, topic string) []testRecord { return kcatRoundTrip(t, servers, topic, partitions) }},
		{"kafkajs", func(t *testing.T, topic string) []testRecord {
			return kafkajsRoundTrip(t, servers, topic, topic+"-group", true)
		}},
		{"sarama", func(t *testing.T, topic string) []testRecord {
			return saramaRoundTrip(t, servers, topic, topic+"-group")
		}},
		{"franz-go", func(t *testing.T, topic string) []testRecord {
			return franzRoundTrip(t, kafkaAddresses(servers), topic)
		}},
	} {
		t.Run(client.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			topic := "replicated-" + client.name
			replicatedTopic(ctx, t, admin, topic, partitions, nil)
			records := client.roundTrip(t, topic)
			logEnds := map[int32]int64{}
			for p := range int32(partitions) {
				logEnds[p] = 0
			}
			for _, r := range records {
				logEnds[r.partition]++
			}
			waitReplicated(t, servers, topic, logEnds)
		})
	}
}

// waitReplicated waits until each of servers reports, for every partition
// of topic in logEnds, the log end offset logEnds gives and a high
// watermark equal to it (strata_ingest_log_end_offset and
// strata_ingest_high_watermark on /metrics). A follower learns the high
// watermark from the leader's answer to its next fetch, so it may lag the
// leader's for a moment after the last acknowledgement.
func waitReplicated(t *testing.T, servers []*server, topic string, logEnds map[int32]int64) {
	t.Helper()
	const patience = 30 * time.Second
	deadline := time.Now().Add(patience)
	for {
		var behind []string
		for _, s := range servers {
			m := scrapeMetrics(t, s)
			for partition, want := range logEnds {
				labels := []string{"partition", strconv.Itoa(int(partition)), "topic", topic}
				logEnd, haveLogEnd := m.find("strata_ingest_log_end_offset", labels...)
				highWatermark, haveHighWatermark := m.find("strata_ingest_high_watermark", labels...)
				if !haveLogEnd || !haveHighWatermark || logEnd != float64(want) || highWatermark != float64(want) {
					behind = append(behind, fmt.Sprintf("%s[%d] on %s: log end %v (reported %v), high watermark %v (reported %v), want both %d",
						topic, partition, s.kafka, logEnd, haveLogEnd, highWatermark, haveHighWatermark, want))
				}
			}
		}
		if len(behind) == 0 {
			return
		}
		if time.Now().After(deadline) {
			slices.Sort(behind)
			t.Fatalf("not replicated within %v:\n%s", patience, strings.Join(behind, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// find is the sample of name whose labels are exactly labels (name, value
// pairs), if there is one.
func (m metricSamples) find(name string, labels ...string) (float64, bool) {
	want := labelSet(labels)
	for _, s := range m {
		if s.name == name && len(s.labels) == len(want) && hasLabels(s, want) {
			return s.value, true
		}
	}
	return 0, false
}
