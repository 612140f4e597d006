package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// kcat runs kcat with args and stdin, returning its standard output.
func kcat(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat is not installed (make test installs it through scripts/test-deps)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// kcatMetadata is the part of `kcat -L -J` the test reads.
type kcatMetadata struct {
	Brokers []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string `json:"topic"`
		Partitions []struct {
			Partition int32 `json:"partition"`
			Leader    int32 `json:"leader"`
		} `json:"partitions"`
	} `json:"topics"`
}

// led reports whether md lists topic with a leader for each of its
// partitions.
func (md kcatMetadata) led(topic string) bool {
	for _, mt := range md.Topics {
		if mt.Topic != topic {
			continue
		}
		for _, p := range mt.Partitions {
			if p.Leader < 0 {
				return false
			}
		}
		return len(mt.Partitions) > 0
	}
	return false
}

// kcatMessage is one line of `kcat -C -J`.
type kcatMessage struct {
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Key       *string  `json:"key"`
	Payload   *string  `json:"payload"`
	Headers   []string `json:"headers"`
}

// printable returns a random string of letters and digits.
func printable(rng *rand.Rand, n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,-_"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

// TestKcatRoundTrip lists metadata with kcat, produces keyed records with
// headers and librdkafka's compression with kcat, and consumes them back
// with kcat and franz-go, checking every byte.
func TestKcatRoundTrip(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	createTopic(t, s, "kcat-topic", 3, nil)
	kcatRoundTrip(t, []*server{s}, "kcat-topic", 3)
}

// kcatCodecs are the compression codecs kcatRoundTrip's partitions are
// produced with, in turn.
var kcatCodecs = []string{"snappy", "lz4", "zstd", "gzip"}

// kcatRoundTrip is the kcat round trip against servers, kcat and franz-go
// bootstrapped from all of them: kcat -L must name every one of them as a
// broker and one of them as the leader of each of topic's partitions; kcat
// produces 200 keyed records with headers to each partition with acks=all,
// compressed with snappy, lz4, zstd and gzip in turn (librdkafka's frames
// pass the broker's checks of what Kafka's decoders read), and kcat and franz-go consume them back,
// checking every byte, partition and offset. It returns the records as
// produced.
func kcatRoundTrip(t *testing.T, servers []*server, topic string, partitions int32) []testRecord {
	t.Helper()
	brokers := strings.Join(kafkaAddresses(servers), ",")
	var md kcatMetadata
	// The broker kcat asks may not have applied the topic, or its leaders,
	// yet (each applies the metadata log at its own pace); kcat leaves the
	// topic out or shows leader -1 until it has, and is asked again, as a
	// client would.
	for attempt := 0; ; attempt++ {
		md = kcatMetadata{}
		if err := json.Unmarshal([]byte(kcat(t, "", "-b", brokers, "-L", "-J")), &md); err != nil {
			t.Fatalf("kcat -L -J: %v", err)
		}
		if attempt == 100 || md.led(topic) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var names []string
	ids := map[int32]bool{}
	for _, b := range md.Brokers {
		names = append(names, b.Name)
		ids[b.ID] = true
	}
	slices.Sort(names)
	if want := slices.Sorted(slices.Values(kafkaAddresses(servers))); !slices.Equal(names, want) {
		t.Fatalf("kcat sees brokers %+v, want one at each of %v", md.Brokers, want)
	}
	found := false
	for _, mt := range md.Topics {
		if mt.Topic != topic {
			continue
		}
		found = true
		if len(mt.Partitions) != int(partitions) {
			t.Fatalf("kcat sees %d partitions, want %d", len(mt.Partitions), partitions)
		}
		for _, p := range mt.Partitions {
			if !ids[p.Leader] {
				t.Fatalf("partition %d leader %d, want one of the brokers %+v", p.Partition, p.Leader, md.Brokers)
			}
		}
	}
	if !found {
		t.Fatalf("kcat -L does not list %s: %+v", topic, md.Topics)
	}

	rng := rand.New(rand.NewPCG(3, 4))
	type kv struct{ key, value string }
	want := map[int32][]kv{}
	for partition := range partitions {
		var input strings.Builder
		for range 200 {
			r := kv{key: printable(rng, 1+rng.IntN(16)), value: printable(rng, rng.IntN(2000))}
			r.key = strings.ReplaceAll(r.key, "|", "")
			want[partition] = append(want[partition], r)
			fmt.Fprintf(&input, "%s|%s\n", r.key, r.value)
		}
		kcat(t, input.String(), "-b", brokers, "-X", "acks=all", "-P", "-t", topic, "-p", fmt.Sprint(partition),
			"-K", "|", "-H", "origin=kcat", "-H", "empty=", "-z", kcatCodecs[int(partition)%len(kcatCodecs)])
	}

	out := kcat(t, "", "-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-J", "-q")
	got := map[int32][]kcatMessage{}
	scanner := bufio.NewScanner(strings.NewReader(out))
	scanner.Buffer(nil, 1<<20)
	for scanner.Scan() {
		var m kcatMessage
		if err := json.Unmarshal(scanner.Bytes(), &m); err != nil {
			t.Fatalf("kcat -C -J line %q: %v", scanner.Text(), err)
		}
		got[m.Partition] = append(got[m.Partition], m)
	}
	for partition, records := range want {
		if len(got[partition]) != len(records) {
			t.Fatalf("partition %d: kcat consumed %d records, produced %d", partition, len(got[partition]), len(records))
		}
		for i, m := range got[partition] {
			r := records[i]
			if m.Offset != int64(i) || m.Key == nil || *m.Key != r.key || m.Payload == nil || *m.Payload != r.value {
				t.Fatalf("partition %d record %d: got offset %d key %v, want offset %d key %q", partition, i, m.Offset, m.Key, i, r.key)
			}
			if strings.Join(m.Headers, ",") != "origin,kcat,empty," {
				t.Fatalf("partition %d record %d: headers %q", partition, i, m.Headers)
			}
		}
	}

	// The same bytes through franz-go.
	var produced []testRecord
	for partition, records := range want {
		for i, r := range records {
			produced = append(produced, testRecord{partition: partition, offset: int64(i), key: []byte(r.key), value: []byte(r.value)})
		}
	}
	consumed := consumeAllSeeds(t, kafkaAddresses(servers), topic, len(produced))
	for i := range consumed {
		consumed[i].headers = nil
	}
	checkSameRecords(t, produced, consumed)
	return produced
}
