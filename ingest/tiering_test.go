package ingest

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/offload"
	"github.com/stratalog/strata/remotefetch"
	"github.com/stratalog/strata/replica"
)

// fakeOffloader records what the broker hands offload and reports disk
// pressure when told to.
type fakeOffloader struct {
	full   atomic.Bool
	mu     sync.Mutex
	led    map[string]offload.Partition
	purged []string // "<topic id>-<partition>"
}

func (f *fakeOffloader) Add(p offload.Partition) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.led == nil {
		f.led = map[string]offload.Partition{}
	}
	f.led[p.Topic] = p
	return nil
}

func (f *fakeOffloader) Remove(topic string, _ int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.led, topic)
}

func (f *fakeOffloader) Purge(_ string, topicID uuid.UUID, partition int32, _ func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.purged = append(f.purged, fmt.Sprintf("%s-%d", topicID, partition))
}

func (f *fakeOffloader) Notify(string, int32)         {}
func (f *fakeOffloader) NotifyLogStart(string, int32) {}
func (f *fakeOffloader) AdmitWrite(int64) bool        { return !f.full.Load() }

func (f *fakeOffloader) has(topic string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.led[topic]
	return ok
}

// TestTieredPartitionsAndDiskPressure checks that tiered topics' partitions
// are handed to offload (and untiered ones not), and that Produce answers
// KAFKA_STORAGE_ERROR while offload reports disk pressure, then recovers.
func TestTieredPartitionsAndDiskPressure(t *testing.T) {
	off := &fakeOffloader{}
	b := newTestBrokerTiering(t, nil, nil, &Tiering{Offload: off})
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "tiered"}
	tiered := h.topic(1, nil)
	h.name = "local"
	local := h.topic(1, map[string]string{"remote.storage.enable": "false"})
	if !off.has(tiered.Name) || off.has(local.Name) {
		t.Fatalf("offload leads %v; want the tiered topic only", off.led)
	}
	p, err := b.partitions.Leader(b.meta.State(), tiered.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Tiered() || p.LogConfig().RetentionMs != 3600000 {
		t.Fatalf("tiered partition's log settings %+v: want local.retention.ms (1 h) as its retention", p.LogConfig())
	}

	h.produce(tiered, 3)
	off.full.Store(true)
	for _, topic := range []string{tiered.Name, local.Name} {
		topicMeta, _ := b.meta.State().Topic(topic)
		resp := h.client.request(produceRequest(topicMeta, 0, h.batch(2)), 9).(*kmsg.ProduceResponse)
		wantCode(t, "produce to "+topic+" under disk pressure", resp.Topics[0].Partitions[0].ErrorCode, kerr.KafkaStorageError)
	}
	off.full.Store(false)
	h.produce(tiered, 3)
	if end := p.HighWatermark(); end != 6 {
		t.Fatalf("high watermark %d after two accepted batches of 3, want 6 (nothing written under pressure)", end)
	}
}

// TestADeletedTopicsObjectsArePurged: once a topic's deletion reaches
// the broker, each of its partitions is handed to offload to delete its
// objects in the bucket, the untiered topic's too (it may hold objects
// from before tiering was turned off).
func TestADeletedTopicsObjectsArePurged(t *testing.T) {
	off := &fakeOffloader{}
	b := newTestBrokerTiering(t, nil, nil, &Tiering{Offload: off})
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "purged"}
	tiered := h.topic(2, nil)
	h.name = "purged-local"
	local := h.topic(1, map[string]string{"remote.storage.enable": "false"})
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 30000
	req.TopicNames = []string{tiered.Name, local.Name}
	resp := h.client.request(req, 3).(*kmsg.DeleteTopicsResponse)
	for _, rt := range resp.Topics {
		wantCode(t, "delete "+deref(rt.Topic), rt.ErrorCode, nil)
	}
	want := []string{fmt.Sprintf("%s-0", tiered.ID), fmt.Sprintf("%s-1", tiered.ID), fmt.Sprintf("%s-0", local.ID)}
	slices.Sort(want)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		off.mu.Lock()
		got := slices.Sorted(slices.Values(off.purged))
		off.mu.Unlock()
		if slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("purged %q 30 s after the deletion, want %q", got, want)
		}
	}
}

// fakeRemote answers remote reads with fixed bytes and records the
// requests of each FetchMany. Each result's bytes are its own copy, which
// its Release overwrites, as a Reader's recycled block would be: a
// response written after its Release carries garbage.
type fakeRemote struct {
	mu      sync.Mutex
	calls   [][]remotefetch.Request
	records []byte
	// onlyEmpty answers as a SkipEmpty read that found only emptied
	// batches to the end of the tiered data, ending at offset next.
	onlyEmpty bool
	next      int64
	// timestamps, if set, answers OffsetForTimestamp, given its bound.
	timestamps func(below int64) (remotefetch.TimestampOffset, bool)
	results    int
	released   int
}

func (f *fakeRemote) FetchMany(_ context.Context, reqs []remotefetch.Request) []remotefetch.FetchResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, reqs)
	out := make([]remotefetch.FetchResult, len(reqs))
	for i, r := range reqs {
		if r.Offset < 0 {
			out[i].Err = remotefetch.ErrOffsetOutOfRange
			continue
		}
		records := bytes.Clone(f.records)
		f.results++
		next := int64(2)
		if f.onlyEmpty {
			next = f.next
		}
		out[i].Result = remotefetch.NewResult(records, next, func() {
			for j := range records {
				records[j] = 0xdb
			}
			f.mu.Lock()
			f.released++
			f.mu.Unlock()
		})
		out[i].OnlyEmpty = f.onlyEmpty
	}
	return out
}

// unreleased is how many results have not been released.
func (f *fakeRemote) unreleased() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.results - f.released
}

func (f *fakeRemote) OffsetForTimestamp(_ context.Context, _ remotefetch.Partition, _, below int64) (remotefetch.TimestampOffset, bool, error) {
	if f.timestamps != nil {
		found, ok := f.timestamps(below)
		return found, ok, nil
	}
	return remotefetch.TimestampOffset{Offset: 1, Timestamp: 7, LeaderEpoch: 0}, true, nil
}

// deleteRecords sends DeleteRecords up to offset for one partition and
// returns its error code.
func (h *handlerTest) deleteRecords(topic meta.Topic, partition int32, offset int64) int16 {
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic.Name
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return h.client.request(req, 2).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode
}

// commitRemote records in meta a committed segment [base, end] of a
// partition, as offload would after an upload.
func commitRemote(t *testing.T, b *Broker, topic meta.Topic, partition int32, base, end int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := uuid.New()
	cmds := []meta.Command{
		&meta.BeginSegmentCopy{Topic: topic.Name, TopicID: topic.ID, Partition: partition, SegmentID: id,
			BaseOffset: base, EndOffset: end, SizeBytes: 100, ObjectKey: "key-" + id.String(),
			LeaderEpochs: []meta.EpochEntry{{Epoch: 0, StartOffset: base}}},
		&meta.CommitSegmentCopy{Topic: topic.Name, TopicID: topic.ID, Partition: partition, SegmentID: id},
	}
	for _, cmd := range cmds {
		if _, err := b.meta.Propose(ctx, cmd); err != nil {
			t.Fatal(err)
		}
	}
	// The partition learns what the bucket holds from the metadata watch,
	// on the replica manager's goroutine: a fetch sent before would find
	// its offset out of range.
	p, err := b.partitions.Leader(b.meta.State(), topic.Name, partition)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, next, ok := p.RemoteRange(); ok && next > end {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("partition %d does not see its bucket reach %d within a minute", partition, end+1)
		}
		runtime.Gosched()
	}
}

// TestFetchBelowLocalStartReadsRemote checks that a fetch below the local
// log start goes to the remote reader (both partitions of one Fetch in one
// FetchMany) and that the offsets clients see follow the bucket.
func TestFetchBelowLocalStartReadsRemote(t *testing.T) {
	remote := &fakeRemote{}
	b := newTestBrokerTiering(t, nil, nil, &Tiering{Offload: &fakeOffloader{}, Remote: remote})
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "remote"}
	topic := h.topic(2, nil)
	remote.records = h.produce(topic, 2) // what the bucket returns: the batch at 0
	h.produce(topic, 3)
	st := b.meta.State()
	for i := range int32(2) {
		p, err := b.partitions.Leader(st, topic.Name, i)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			// Partition 1 needs data too: one batch of 5 at offset 0.
			resp := h.client.request(produceRequest(topic, 1, h.batch(5)), 9).(*kmsg.ProduceResponse)
			wantCode(t, "produce to partition 1", resp.Topics[0].Partitions[0].ErrorCode, nil)
		}
		commitRemote(t, b, topic, i, 0, 1)
		if _, err := p.Log().DeleteBefore(2); err != nil {
			t.Fatal(err)
		}
	}

	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes, req.MaxWaitMillis, req.SessionEpoch = 1<<20, 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic.Name, topic.ID
	for i := range int32(2) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = i, 1, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp := h.client.request(req, 13).(*kmsg.FetchResponse)
	for _, p := range resp.Topics[0].Partitions {
		wantCode(t, "remote fetch", p.ErrorCode, nil)
		if !bytes.Equal(p.RecordBatches, remote.records) || p.LogStartOffset != 0 || p.HighWatermark != 5 {
			t.Fatalf("partition %d: %d record bytes, log start %d, high watermark %d; want the remote batch, 0, 5",
				p.Partition, len(p.RecordBatches), p.LogStartOffset, p.HighWatermark)
		}
	}
	if len(remote.calls) != 1 || len(remote.calls[0]) != 2 {
		t.Fatalf("remote reads %v: want one FetchMany of both partitions", remote.calls)
	}

	// A response with room for one partition: the other's read, dropped,
	// is released as well. The connection handles one request at a time,
	// so each response's results are released by the next response.
	req.MaxBytes = 1
	resp = h.client.request(req, 13).(*kmsg.FetchResponse)
	if got := resp.Topics[0].Partitions; !bytes.Equal(got[0].RecordBatches, remote.records) || len(got[1].RecordBatches) != 0 {
		t.Fatalf("a fetch with room for one partition returned %d and %d record bytes, want the first partition's batch only", len(got[0].RecordBatches), len(got[1].RecordBatches))
	}

	for ts, want := range map[int64]int64{-2: 0, -4: 2, -5: 1, -1: 5, 0: 1} {
		p := h.listOffset(topic, ts, 9)
		wantCode(t, "list offsets", p.ErrorCode, nil)
		if p.Offset != want {
			t.Errorf("ListOffsets %d = %d, want %d", ts, p.Offset, want)
		}
	}

	// DeleteRecords moves the remote log start in meta first: the bucket's
	// segment [0, 1] is below it, so an offset under the new start is out
	// of range in both places and no longer sent to the bucket.
	wantCode(t, "DeleteRecords on tiered data", h.deleteRecords(topic, 0, 3), nil)
	if man, _ := b.meta.State().Manifest(topic.Name, 0); man.RemoteLogStartOffset != 3 {
		t.Fatalf("remote log start %d after DeleteRecords to 3", man.RemoteLogStartOffset)
	}
	calls := len(remote.calls)
	req.Topics[0].Partitions = req.Topics[0].Partitions[:1]
	for _, offset := range []int64{1, 2} {
		req.Topics[0].Partitions[0].FetchOffset = offset
		p := h.client.request(req, 13).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		wantCode(t, fmt.Sprintf("fetch at %d after DeleteRecords to 3", offset), p.ErrorCode, kerr.OffsetOutOfRange)
		if p.LogStartOffset != 3 {
			t.Fatalf("fetch at %d: log start %d, want 3", offset, p.LogStartOffset)
		}
	}
	if len(remote.calls) != calls {
		t.Fatalf("a fetch below the remote log start went to the bucket: %v", remote.calls[calls:])
	}
	if n := remote.unreleased(); n != 0 {
		t.Fatalf("%d remote read results were never released", n)
	}
}

// TestTimestampLookupBelowARemoteStartAboveTheLocal: remote retention moved
// the remote log start (2) above the hot log's (0), as BeginSegmentDelete
// does until offload's next expiry pass moves the hot log's. ListOffsets
// by a timestamp older than every record answers the log start, 2, not
// an offset below it nor none.
func TestTimestampLookupBelowARemoteStartAboveTheLocal(t *testing.T) {
	b := newTestBrokerTiering(t, nil, nil, &Tiering{Offload: &fakeOffloader{}, Remote: &fakeRemote{}})
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "remote-start"}
	topic := h.topic(1, nil)
	h.produce(topic, 2) // [0, 1]
	h.produce(topic, 3) // [2, 4]
	commitRemote(t, b, topic, 0, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, _ := b.meta.State().Manifest(topic.Name, 0)
	if _, err := b.meta.Propose(ctx, &meta.BeginSegmentDelete{Topic: topic.Name, TopicID: topic.ID, SegmentID: m.Segments[0].ID}); err != nil {
		t.Fatal(err)
	}
	p, err := b.partitions.Leader(b.meta.State(), topic.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); p.LogStartOffset() != 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("log start %d 30 s after the remote start moved to 2", p.LogStartOffset())
		}
	}
	for _, ts := range []int64{-2, -4, 0} {
		if got := h.listOffset(topic, ts, 9); got.ErrorCode != 0 || got.Offset != 2 {
			t.Errorf("ListOffsets(%d) = offset %d, error %d; want 2", ts, got.Offset, got.ErrorCode)
		}
	}
}

// TestNothingServedFromBelowAGap: the hot log starts past the bucket's end
// (a topic that turned tiering off deleted past it), so the log start
// clients are told is the hot log's; a fetch or a timestamp lookup below
// it is not answered from the bucket's older records either (before, a
// fetch below the start a client was told read them).
func TestNothingServedFromBelowAGap(t *testing.T) {
	remote := &fakeRemote{}
	b := newTestBrokerTiering(t, nil, nil, &Tiering{Offload: &fakeOffloader{}, Remote: remote})
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "gap"}
	topic := h.topic(1, nil)
	remote.records = h.produce(topic, 2) // [0, 1], in the bucket
	h.produce(topic, 3)                  // [2, 4]
	h.produce(topic, 3)                  // [5, 7]
	tierPartition0(t, b, topic, 1, 5)
	got := h.client.request(fetchFromStart(topic, 1<<20), 13).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	wantCode(t, "a fetch at 0, below the gap", got.ErrorCode, kerr.OffsetOutOfRange)
	if got.LogStartOffset != 5 || len(remote.calls) != 0 {
		t.Fatalf("fetch at 0: log start %d, remote reads %v; want 5 and none", got.LogStartOffset, remote.calls)
	}
	for _, ts := range []int64{-2, 0} {
		if got := h.listOffset(topic, ts, 9); got.ErrorCode != 0 || got.Offset != 5 {
			t.Errorf("ListOffsets(%d) = offset %d, error %d; want 5", ts, got.Offset, got.ErrorCode)
		}
	}
}

// TestRemotePartitionKeepsItsPlaceInTheBudget: a fetch of a partition read
// from the bucket and, after it, a local one with more data than the
// response has room for beside it. The remote partition, first in the
// request, is served and the local one waits: before, the local
// partitions spent the budget first and the remote read was dropped on
// every fetch. Asked the other way round, the local one is served.
func TestRemotePartitionKeepsItsPlaceInTheBudget(t *testing.T) {
	remote := &fakeRemote{}
	b := newTestBrokerTiering(t, nil, nil, &Tiering{Offload: &fakeOffloader{}, Remote: remote})
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "budget"}
	topic := h.topic(2, nil)
	remote.records = h.produce(topic, 2) // partition 0: [0, 1], in the bucket
	h.produce(topic, 3)
	local := h.batch(5)
	resp := h.client.request(produceRequest(topic, 1, append([]byte(nil), local...)), 9).(*kmsg.ProduceResponse)
	wantCode(t, "produce to partition 1", resp.Topics[0].Partitions[0].ErrorCode, nil)
	tierPartition0(t, b, topic, 1, 2)

	fetch := func(order ...int32) map[int32]int {
		req := fetchFromStart(topic, int32(len(remote.records)+len(local)-1), order...)
		got := map[int32]int{}
		for _, p := range h.client.request(req, 13).(*kmsg.FetchResponse).Topics[0].Partitions {
			wantCode(t, fmt.Sprintf("fetch of partition %d", p.Partition), p.ErrorCode, nil)
			got[p.Partition] = len(p.RecordBatches)
		}
		return got
	}
	if got := fetch(0, 1); got[0] != len(remote.records) || got[1] != 0 {
		t.Fatalf("the remote partition first: %v record bytes by partition, want %d from 0 and none from 1", got, len(remote.records))
	}
	if got := fetch(1, 0); got[1] != len(local) || got[0] != 0 {
		t.Fatalf("the local partition first: %v record bytes by partition, want %d from 1 and none from 0", got, len(local))
	}
}

// TestEmptiedBatchesAtTheBucketsEndGoOnIntoTheHotLog: the bucket's read
// found only batches compaction emptied, up to the end of the tiered data
// (at 2); the hot log's batches from there go in the same response after
// them, with the bucket's log start. Before, the empty batches came alone,
// which librdkafka takes for a message too large to fetch.
func TestEmptiedBatchesAtTheBucketsEndGoOnIntoTheHotLog(t *testing.T) {
	remote := &fakeRemote{onlyEmpty: true, next: 2}
	b := newTestBrokerTiering(t, nil, nil, &Tiering{Offload: &fakeOffloader{}, Remote: remote})
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "emptied"}
	topic := h.topic(1, nil)
	remote.records = h.produce(topic, 2) // stands for the emptied batches [0, 1]
	local := h.produce(topic, 3)         // [2, 4]
	tierPartition0(t, b, topic, 1, 2)
	got := h.client.request(fetchFromStart(topic, 1<<20), 13).(*kmsg.FetchResponse).Topics[0].Partitions[0]
	wantCode(t, "fetch at 0", got.ErrorCode, nil)
	if want := append(bytes.Clone(remote.records), local...); !bytes.Equal(got.RecordBatches, want) || got.LogStartOffset != 0 {
		t.Fatalf("fetch at 0: %d record bytes, log start %d; want the bucket's %d and the hot log's %d after them, log start 0",
			len(got.RecordBatches), got.LogStartOffset, len(remote.records), len(local))
	}
}

// TestTimestampLookupWhileLocalRetentionMoves: the bucket searches only
// below the hot log's start (2); local retention moves that start to 5
// during the search. The offsets between are searched in the bucket again
// (where the record at 3 is found), not skipped by a local search from 5.
func TestTimestampLookupWhileLocalRetentionMoves(t *testing.T) {
	remote := &fakeRemote{}
	b := newTestBrokerTiering(t, nil, nil, &Tiering{Offload: &fakeOffloader{}, Remote: remote})
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "retention-moves"}
	topic := h.topic(1, nil)
	h.produce(topic, 2) // [0, 1]
	h.produce(topic, 3) // [2, 4]
	h.produce(topic, 3) // [5, 7]
	p := tierPartition0(t, b, topic, 4, 2)
	var belows []int64
	remote.timestamps = func(below int64) (remotefetch.TimestampOffset, bool) {
		belows = append(belows, below)
		if below == 2 {
			if _, err := p.Log().DeleteBefore(5); err != nil {
				t.Error(err)
			}
			return remotefetch.TimestampOffset{}, false
		}
		return remotefetch.TimestampOffset{Offset: 3, Timestamp: 9}, true
	}
	if got := h.listOffset(topic, 9, 9); got.ErrorCode != 0 || got.Offset != 3 || !slices.Equal(belows, []int64{2, 5}) {
		t.Fatalf("ListOffsets(9) = offset %d, error %d, the bucket searched below %v; want 3, below 2 then 5", got.Offset, got.ErrorCode, belows)
	}
}

// tierPartition0 commits partition 0's offsets [0, end] to the bucket,
// waits until the partition notes them (the run loop notes a commit
// asynchronously), and deletes its hot log below localStart, as retention
// would: what it returns reads below localStart from the bucket.
func tierPartition0(t *testing.T, b *Broker, topic meta.Topic, end, localStart int64) *replica.Partition {
	t.Helper()
	p, err := b.partitions.Leader(b.meta.State(), topic.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	commitRemote(t, b, topic, 0, 0, end)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, next, ok := p.RemoteRange(); ok && next == end+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the partition did not note the bucket's segment [0, %d] in 30 s", end)
		}
	}
	if _, err := p.Log().DeleteBefore(localStart); err != nil {
		t.Fatal(err)
	}
	return p
}
