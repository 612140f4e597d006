package meta

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/uuid"
)

// scenarioLog returns a pseudo-random but reproducible command log that
// touches every command type, succeeding and failing, alone and batched:
// the input of the determinism, snapshot and golden tests.
func scenarioLog(t testing.TB, seed uint64, steps int) [][]byte {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	newID := func() uuid.UUID {
		var id uuid.UUID
		for i := range id {
			id[i] = byte(r.IntN(256))
		}
		return id
	}
	var (
		log      [][]byte
		topics   []CreateTopic
		segments       = map[string][]BeginSegmentCopy{}
		epochs         = map[int32]int64{}
		next     int64 = 1
	)
	add := func(cmds ...Command) { log = append(log, entry(t, cmds...)) }
	add(InitCluster{ClusterID: "scenario"})
	for id := int32(1); id <= 4; id++ {
		add(brokerCmd(id))
		epochs[id] = next
		next++
	}
	for step := 0; step < steps; step++ {
		switch k := r.IntN(10); {
		case k < 2 || len(topics) == 0:
			name := fmt.Sprintf("topic-%d", r.IntN(12))
			c := CreateTopic{ID: newID(), Name: name, Configs: map[string]string{"retention.ms": fmt.Sprint(3600000 * (1 + r.IntN(5)))}}
			for range 1 + r.IntN(3) {
				c.Replicas = append(c.Replicas, []int32{1 + int32(r.IntN(2)), 3 + int32(r.IntN(2))})
			}
			add(c)
			topics = append(topics, c)
		case k < 5:
			// A burst of offset commits, batched like the batcher does.
			var batch []Command
			for range 1 + r.IntN(20) {
				tp := topics[r.IntN(len(topics))]
				batch = append(batch, CommitOffsets{Group: fmt.Sprintf("group-%d", r.IntN(5)), CommitTimeMs: int64(step),
					Offsets: []OffsetCommit{{Topic: tp.Name, Partition: int32(r.IntN(3)), Offset: int64(r.IntN(1000)), LeaderEpoch: -1, Metadata: "m"}}})
			}
			add(batch...)
		case k < 7:
			tp := topics[r.IntN(len(topics))]
			list := segments[tp.Name]
			base := int64(len(list) * 100)
			c := BeginSegmentCopy{Topic: tp.Name, TopicID: tp.ID, SegmentID: newID(), BaseOffset: base, EndOffset: base + 99,
				MaxTimestamp: int64(step), SizeBytes: 1 << 20, LeaderEpochs: []EpochEntry{{Epoch: 0, StartOffset: base}},
				ObjectKey: fmt.Sprintf("%s/0/%020d.seg", tp.Name, base)}
			segments[tp.Name] = append(list, c)
			add(c, CommitSegmentCopy{Topic: tp.Name, TopicID: tp.ID, SegmentID: c.SegmentID})
			if len(list) > 2 && r.IntN(2) == 0 {
				old := list[0]
				add(BeginSegmentDelete{Topic: tp.Name, TopicID: tp.ID, SegmentID: old.SegmentID})
				add(FinishSegmentDelete{Topic: tp.Name, TopicID: tp.ID, SegmentID: old.SegmentID})
			}
		case k < 8:
			tp := topics[r.IntN(len(topics))]
			add(AlterTopicConfigs{Name: tp.Name, Set: map[string]string{"segment.ms": fmt.Sprint(1000 + r.IntN(1000))}, Delete: []string{"retention.ms"}})
			add(AlterPartition{Topic: tp.Name, Partition: 0, PartitionEpoch: int32(r.IntN(3)), Leader: tp.Replicas[0][0], ISR: []int32{tp.Replicas[0][0]}})
		case k < 9:
			id := 1 + int32(r.IntN(4))
			if r.IntN(2) == 0 {
				add(FenceBroker{ID: id, Epoch: epochs[id]})
			} else {
				add(brokerCmd(id))
				epochs[id] = next
				next++
			}
		default:
			tp := topics[r.IntN(len(topics))]
			add(DeleteTopic{Name: tp.Name, ID: tp.ID}, DeleteOffsets{Group: fmt.Sprintf("group-%d", r.IntN(5))})
		}
	}
	// The schema registry's commands, after the rest so that the
	// scenario's earlier entries stay as they were: versions, a shared id,
	// a reference, deletes, settings, and refusals.
	add(RegisterSchema{Subject: "a-value", Type: "AVRO", Text: `"string"`, Fingerprint: "f1"})
	add(RegisterSchema{Subject: "b-value", Type: "AVRO", Text: `"string"`, Fingerprint: "f1"})
	add(RegisterSchema{Subject: "a-value", Type: "AVRO", Text: `"long"`, Fingerprint: "f2", LatestVersion: 1,
		References: []SchemaReference{{Name: "B", Subject: "b-value", Version: 1}}})
	add(RegisterSchema{Subject: "a-value", Type: "JSON", Text: `{}`, Fingerprint: "f3"}) // stale: refused
	add(DeleteSchemaVersion{Subject: "b-value", Version: 1})                             // referenced: refused
	add(DeleteSchemaVersion{Subject: "a-value", Version: 1}, DeleteSchemaVersion{Subject: "a-value", Version: 1, Permanent: true})
	add(SetRegistryConfig{Compatibility: "FULL"}, SetRegistryConfig{Subject: "b-value", Mode: "READONLY", SetMode: true})
	return log
}
