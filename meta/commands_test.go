package meta

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/sasl"
)

// oneOfEach is a command of every registered type.
func oneOfEach() []Command {
	id := uuid.MustParse("6ba7b812-9dad-11d1-80b4-00c04fd430c8")
	seg := uuid.MustParse("6ba7b814-9dad-11d1-80b4-00c04fd430c8")
	return []Command{
		InitCluster{ClusterID: "abc"},
		brokerCmd(1),
		FenceBroker{ID: 1, Epoch: 3},
		CreateTopic{ID: id, Name: "t", Replicas: [][]int32{{1, 2}}, Configs: map[string]string{"retention.ms": "1", "cleanup.policy": "compact"}},
		DeleteTopic{Name: "t", ID: id},
		AlterTopicConfigs{Name: "t", ID: id, Set: map[string]string{"segment.ms": "5"}, Delete: []string{"preallocate"}},
		AlterPartition{Topic: "t", TopicID: id, Partition: 0, PartitionEpoch: 2, Leader: 1, ISR: []int32{1, 2}},
		BeginSegmentCopy{Topic: "t", TopicID: id, SegmentID: seg, BaseOffset: 10, EndOffset: 20, MaxTimestamp: 5, SizeBytes: 99,
			LeaderEpochs: []EpochEntry{{Epoch: 1, StartOffset: 10}}, ObjectKey: "k"},
		CommitSegmentCopy{Topic: "t", TopicID: id, LeaderEpoch: 1, SegmentID: seg},
		BeginSegmentDelete{Topic: "t", TopicID: id, LeaderEpoch: 1, SegmentID: seg},
		FinishSegmentDelete{Topic: "t", TopicID: id, LeaderEpoch: 1, SegmentID: seg},
		MoveRemoteLogStart{Topic: "t", TopicID: id, Partition: 2, LeaderEpoch: 1, Offset: 17},
		BeginSegmentReplace{Topic: "t", TopicID: id, LeaderEpoch: 1, SegmentID: seg, Replaces: []uuid.UUID{id},
			SizeBytes: 10, LeaderEpochs: []EpochEntry{{Epoch: 1, StartOffset: 0}}, ObjectKey: "k"},
		CommitSegmentReplace{Topic: "t", TopicID: id, LeaderEpoch: 1, SegmentID: seg, RetireAtMs: 99},
		SetRemoteCleaned{Topic: "t", TopicID: id, LeaderEpoch: 1, Offset: 7},
		RegisterSchema{Subject: "s-value", Type: "AVRO", Text: `"string"`, Fingerprint: "ab", LatestVersion: 1,
			References: []SchemaReference{{Name: "r", Subject: "other", Version: 2}}},
		DeleteSchemaVersion{Subject: "s-value", Version: 3, Permanent: true},
		SetRegistryConfig{Subject: "s-value", Mode: "READONLY", SetMode: true},
		CommitOffsets{Group: "g", CommitTimeMs: 7, Offsets: []OffsetCommit{{Topic: "t", Offset: 3, LeaderEpoch: -1, Metadata: "m"}}},
		DeleteOffsets{Group: "g", Partitions: []TopicPartition{{Topic: "t", Partition: 0}}},
		CreatePartitions{Topic: "t", TopicID: id, Count: 3, Replicas: [][]int32{{1, 2}, {2, 1}}},
		ExpireOffsets{Offsets: []ExpiredOffset{{Group: "g", Topic: "t", Partition: 0, CommitTimeMs: 7}}},
		ReassignPartition{Topic: "t", TopicID: id, Partition: 1, Replicas: []int32{2, 3}},
		ReassignPartition{Topic: "t", TopicID: id, Partition: 1},
		ElectLeader{Topic: "t", TopicID: id, Partition: 2, Type: ElectUnclean},
		DrainBroker{ID: 3, Draining: true},
		UnregisterBroker{ID: 4},
		AlterBrokerConfigs{Broker: "3", Set: map[string]string{LeaderThrottledRate: "100"}, Delete: []string{FollowerThrottledRate}},
		AlterScramCredential{User: "alice", Delete: []string{sasl.ScramSHA512}, Upsert: []sasl.Credential{{
			Mechanism: sasl.ScramSHA256, Salt: []byte("salt"), Iterations: 4096, StoredKey: []byte("stored"), ServerKey: []byte("server")}}},
		CreateACLs{Bindings: []acl.Binding{{ResourceType: acl.Topic, ResourceName: "orders-", PatternType: acl.PatternPrefixed,
			Principal: "User:alice", Host: "*", Operation: acl.OpWrite, Permission: acl.Allow}}},
		DeleteACLs{Bindings: []acl.Binding{{ResourceType: acl.Group, ResourceName: "g", PatternType: acl.PatternLiteral,
			Principal: "User:*", Host: "10.0.0.1", Operation: acl.OpRead, Permission: acl.Deny}}},
		AlterClientQuota{Entity: QuotaEntity{User: &QuotaName{Name: "u"}, ClientID: &QuotaName{Default: true}},
			Set: map[string]float64{ProducerByteRate: 10, RequestPercentage: 12.5}, Remove: []string{ConsumerByteRate}},
	}
}

func TestEveryCommandTypeIsRegisteredAndRoundTrips(t *testing.T) {
	t.Parallel()
	seen := map[CommandType]bool{}
	for _, cmd := range oneOfEach() {
		data, err := encodeCommand(cmd)
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		again, _ := encodeCommand(cmd)
		if !bytes.Equal(data, again) {
			t.Fatalf("%T: encoding is not deterministic", cmd)
		}
		decoded, err := decodeCommand(data)
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		ptr := reflect.New(reflect.TypeOf(cmd))
		ptr.Elem().Set(reflect.ValueOf(cmd))
		if !reflect.DeepEqual(decoded, ptr.Interface()) {
			t.Fatalf("%T round trip:\n%+v\n%+v", cmd, decoded, ptr.Interface())
		}
		seen[cmd.commandType()] = true
	}
	for typ, spec := range commandSpecs {
		if spec != nil && !seen[CommandType(typ)] {
			t.Errorf("registered command %s has no round-trip case", spec.name)
		}
	}
}

func TestDecodeCommandRefusals(t *testing.T) {
	t.Parallel()
	body := func(typ CommandType, version, flags byte, json string) []byte {
		return append([]byte{byte(typ), version, flags}, json...)
	}
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrInvalidCommand},
		{"header only partly", []byte{2, 1}, ErrInvalidCommand},
		{"type zero", body(0, 1, 0, "{}"), ErrUnknownCommand},
		{"unregistered type", body(99, 1, 0, "{}"), ErrUnknownCommand},
		{"version zero", body(cmdInitCluster, 0, 0, "{}"), ErrUnknownCommand},
		{"newer version", body(cmdInitCluster, 2, 0, "{}"), ErrUnknownCommand},
		{"reserved flag", body(cmdInitCluster, 1, 2, "{}"), ErrUnknownCommand},
		{"optional but unknown", body(99, 1, flagOptional, "{}"), ErrUnknownCommand},
		{"unknown field", body(cmdInitCluster, 1, 0, `{"cluster":"x"}`), ErrInvalidCommand},
		{"two values", body(cmdInitCluster, 1, 0, `{}{}`), ErrInvalidCommand},
		{"wrong type", body(cmdInitCluster, 1, 0, `{"cluster_id":5}`), ErrInvalidCommand},
		{"truncated json", body(cmdInitCluster, 1, 0, `[`), ErrInvalidCommand},
		{"batch", encodeBatch([][]byte{body(cmdInitCluster, 1, 0, "{}"), body(cmdInitCluster, 1, 0, "{}")}), ErrInvalidCommand},
	}
	for _, tc := range cases {
		if _, err := decodeCommand(tc.data); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestBatchEncoding(t *testing.T) {
	t.Parallel()
	a, b := mustEncode(t, InitCluster{ClusterID: "a"}), mustEncode(t, FenceBroker{ID: 1, Epoch: 1})
	if single := encodeBatch([][]byte{a}); !bytes.Equal(single, a) {
		t.Fatal("a one-command entry is not the bare command")
	}
	cmds, err := decodeEntry(encodeBatch([][]byte{a, b}))
	if err != nil || len(cmds) != 2 || !bytes.Equal(cmds[0], a) || !bytes.Equal(cmds[1], b) {
		t.Fatalf("decodeEntry: %v %q", err, cmds)
	}
	if _, err := decodeEntry([]byte{byte(cmdBatch), 2, 0, 1, 0}); !errors.Is(err, ErrUnknownCommand) {
		t.Fatalf("newer batch version: %v", err)
	}
}

func FuzzDecodeCommand(f *testing.F) {
	for _, cmd := range oneOfEach() {
		data, err := encodeCommand(cmd)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		envelopes, err := decodeEntry(data)
		if err != nil {
			return
		}
		for _, env := range envelopes {
			cmd, err := decodeCommand(env)
			if err != nil {
				if !errors.Is(err, ErrInvalidCommand) && !errors.Is(err, ErrUnknownCommand) {
					t.Fatalf("error without a sentinel: %v", err)
				}
				continue
			}
			// Whatever decodes re-encodes canonically: encode, decode
			// and encode again gives the same bytes.
			once, err := encodeCommand(cmd)
			if err != nil {
				t.Fatalf("decoded %T does not encode: %v", cmd, err)
			}
			cmd2, err := decodeCommand(once)
			if err != nil {
				t.Fatalf("re-encoded %T does not decode: %v", cmd, err)
			}
			twice, _ := encodeCommand(cmd2)
			if !bytes.Equal(once, twice) {
				t.Fatalf("%T encoding is not a fixed point", cmd)
			}
			// Applying it to an empty state must not panic.
			h := newHarness(t)
			h.applyRaw(once)
			if err := h.f.err(); err != nil {
				t.Fatalf("a decodable %T stopped the state machine: %v", cmd, err)
			}
		}
	})
}
