package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"pgregory.net/rapid"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
)

// TestReplicationProperties drives three replicas of one partition, each a
// real *Partition over a real hot log, through random sequences of
// produces (acks=all and acks=1), fsyncs of the leader's log, follower
// fetches (the response applied at once or later), the truncation a
// follower does before fetching under a new leader epoch, ISR shrinks and
// expansions, metadata reaching each broker late, crashes (losing what was
// not fsynced, torn or not), lost sessions, restarts and registrations.
//
// The network and the metadata group are direct calls: a fetch is the
// leader's checks (Manager.Leader, the leader epoch) and ReadForFollower,
// then what the fetcher does with the answer (fetcher.go apply); the
// truncation step is the leader's EndOffsetForEpoch and the fetcher's
// divergence and truncateTo. The controller is modelController, meta's
// rules for fencing, registration, elections and AlterPartition. Time is
// the real clock, read only where the code reads it: a shrink looks at the
// followers as replica.lag.time.max.ms after the start of an earlier step,
// so exactly the followers not caught up since that step are lagging.
//
// After every step:
//   - no replica has lost or changed a batch below the highest high
//     watermark it ever exposed, in this incarnation or an earlier one;
//   - no open partition's high watermark went back, or passed its log end;
//   - every record acknowledged at acks=all is at its offset on every ISR
//     member that is up, so it survives every clean election;
//   - below its high watermark, every replica's log is the leader's;
//   - after a crash, every batch that was fsynced is still there.
//
// A follower refusing to truncate below its high watermark, or any error
// the fetcher would only log, fails the test: neither should happen.
func TestReplicationProperties(t *testing.T) {
	root := t.TempDir()
	rapid.Check(t, func(rt *rapid.T) {
		dir, err := os.MkdirTemp(root, "cluster-")
		if err != nil {
			rt.Fatalf("%v", err)
		}
		defer os.RemoveAll(dir)
		c := newModelCluster(rt, dir)
		defer c.close()
		steps := rapid.IntRange(1, 300).Draw(rt, "steps")
		for range steps {
			c.step()
			c.settle()
			c.check()
		}
	})
}

const (
	modelTopic       = "orders"
	modelReplicas    = 3
	modelLagTimeMax  = 10 * time.Second
	modelFirstMillis = 1_700_000_000_000
)

// modelCluster is the cluster under test: the controller, the brokers and
// what the clients were told.
type modelCluster struct {
	rt      *rapid.T
	topic   meta.Topic
	control *modelController
	brokers []*modelBroker
	// steps holds the wall-clock start of every step so far.
	steps []time.Time
	// pending are produces not yet answered; acked the batches answered
	// at acks=all.
	pending  []pendingProduce
	acked    []batchIdentity
	produced int
}

// modelBroker is one broker: its partition while it is up, the fetcher's
// state for it, and what the test remembers of it across restarts.
type modelBroker struct {
	id      int32
	dataDir string
	manager *Manager
	part    *Partition // nil while down

	// The fetcher's followState (fetcher.go): fetching from leader at
	// epoch, diverged until it has truncated under that epoch.
	fetching bool
	leader   int32
	epoch    int32
	diverged bool
	// inFlight is a fetch response not yet applied.
	inFlight *fetchResponse

	// exposed is the highest high watermark any incarnation exposed, and
	// committed the batches below it when it did.
	exposed   int64
	committed []batchIdentity
	// lastHighWatermark is this incarnation's, to see it never goes back.
	lastHighWatermark int64
	// fsynced is what the log had fsynced when it last crashed.
	fsynced []batchIdentity
}

// fetchResponse is what a leader answered a follower's fetch, on its way.
type fetchResponse struct {
	leader, epoch int32
	records       []byte
	highWatermark int64
	outOfRange    bool
}

// pendingProduce is a produce waiting for its answer.
type pendingProduce struct {
	part    *Partition
	outcome AppendOutcome
	acks    Acks
	batch   batchIdentity
}

// batchIdentity names a batch as written: where, by which leader epoch,
// with which records (the CRC covers all but the offset and epoch).
type batchIdentity struct {
	base, last int64
	epoch      int32
	crc        uint32
}

func (b batchIdentity) String() string {
	return fmt.Sprintf("[%d..%d]@%d/%08x", b.base, b.last, b.epoch, b.crc)
}

func newModelCluster(rt *rapid.T, dir string) *modelCluster {
	configs := map[string]string{
		"min.insync.replicas":  strconv.Itoa(rapid.IntRange(1, 2).Draw(rt, "min.insync.replicas")),
		"segment.bytes":        rapid.SampledFrom([]string{"2048", "134217728"}).Draw(rt, "segment.bytes"),
		"segment.index.bytes":  "4096",
		"index.interval.bytes": "256",
	}
	replicas := make([]int32, modelReplicas)
	for i := range replicas {
		replicas[i] = int32(i)
	}
	c := &modelCluster{
		rt:    rt,
		topic: meta.Topic{ID: uuid.New(), Name: modelTopic, Partitions: 1, Configs: configs},
		control: &modelController{
			partition: meta.Partition{Topic: modelTopic, Partition: 0, Replicas: replicas, ISR: slices.Clone(replicas), Leader: replicas[0]},
			fenced:    map[int32]bool{},
			epochs:    map[int32]int64{},
		},
	}
	for _, id := range replicas {
		c.control.epochs[id] = c.control.nextEpoch()
	}
	rt.Logf("topic configs %v", configs)
	for _, id := range replicas {
		b := &modelBroker{id: id, dataDir: filepath.Join(dir, fmt.Sprintf("broker-%d", id))}
		c.brokers = append(c.brokers, b)
		c.start(b)
	}
	return c
}

// start opens the broker's partition as a (re)started broker does, in the
// role the controller gives it, and starts following its leader.
func (c *modelCluster) start(b *modelBroker) {
	id := b.id
	m, err := NewManager(Config{
		BrokerID: id, DataDir: b.dataDir, ProducerStateScanBytes: 1 << 20, SegmentFiles: 16, ReplicaLagTimeMax: modelLagTimeMax,
	}, Deps{
		Meta:        modelMetadata{c.control},
		Lease:       func() error { return c.control.lease(id) },
		Incarnation: func() int64 { return c.control.incarnation(id) },
	})
	if err != nil {
		c.rt.Fatalf("NewManager: %v", err)
	}
	if err := os.MkdirAll(b.dataDir, 0o755); err != nil {
		c.rt.Fatalf("%v", err)
	}
	p, err := m.openPartition(c.topic, c.control.snapshot())
	if err != nil {
		c.rt.Fatalf("broker %d: opening the partition: %v", id, err)
	}
	m.mu.Lock()
	m.mu.open[partitionKey{c.topic.Name, 0}] = p
	m.mu.Unlock()
	b.manager, b.part = m, p
	b.fetching, b.diverged, b.inFlight = false, false, nil
	b.lastHighWatermark = p.HighWatermark()
	r := p.role.Load()
	if !p.leads(r) {
		b.follow(r.leader, r.leaderEpoch)
	}
}

// follow is fetcher.follow for the broker's one partition.
func (b *modelBroker) follow(leader, epoch int32) {
	if b.fetching && b.leader != leader {
		b.fetching = false
	}
	if leader < 0 {
		return
	}
	if !b.fetching || b.epoch != epoch {
		b.fetching, b.leader, b.epoch, b.diverged = true, leader, epoch, true
	}
}

// deliver applies the controller's partition to the broker, as the
// manager's applyRole does with a metadata update.
func (c *modelCluster) deliver(b *modelBroker) {
	assignment := c.control.snapshot()
	change, err := b.part.setRole(roleOf(assignment))
	if err != nil {
		c.rt.Fatalf("broker %d: setRole: %v", b.id, err)
	}
	switch change {
	case roleBecameLeader:
		b.fetching = false
	case roleBecameFollow, roleStillFollower:
		b.follow(assignment.Leader, assignment.LeaderEpoch)
	}
	c.rt.Logf("  broker %d applies leader %d epoch %d isr %v (partition epoch %d)",
		b.id, assignment.Leader, assignment.LeaderEpoch, assignment.ISR, assignment.PartitionEpoch)
}

// stale reports whether the broker is up and has not applied the
// controller's latest partition.
func (c *modelCluster) stale(b *modelBroker) bool {
	return b.part != nil && b.part.role.Load().partitionEpoch != c.control.snapshot().PartitionEpoch
}

// step runs one action drawn from those possible now.
func (c *modelCluster) step() {
	start := time.Now()
	if n := len(c.steps); n > 0 {
		for !start.After(c.steps[n-1]) {
			start = time.Now()
		}
	}
	c.steps = append(c.steps, start)

	var up, down, leaders, followers, responses, stale []*modelBroker
	for _, b := range c.brokers {
		switch {
		case b.part == nil:
			down = append(down, b)
			continue
		case b.part.leads(b.part.role.Load()):
			leaders = append(leaders, b)
		case b.fetching && b.inFlight == nil:
			followers = append(followers, b)
		}
		up = append(up, b)
		if b.inFlight != nil {
			responses = append(responses, b)
		}
		if c.stale(b) {
			stale = append(stale, b)
		}
	}
	type action struct {
		name    string
		weight  int
		brokers []*modelBroker
		run     func(*modelBroker)
	}
	actions := []action{
		{"produce", 4, leaders, c.produce},
		{"fsync the leader's log", 2, leaders, c.fsync},
		{"fetch", 7, followers, c.fetch},
		{"a fetch response arrives", 2, responses, c.arrive},
		{"shrink the ISR", 1, leaders, c.shrink},
		{"metadata reaches a broker", 4, stale, c.deliver},
		{"crash", 1, up, c.crash},
		{"restart", 2, down, c.restart},
		{"session expires", 1, c.unfenced(), c.expire},
		{"register again", 1, up, c.register},
	}
	var names []string
	for _, a := range actions {
		if len(a.brokers) > 0 {
			for range a.weight {
				names = append(names, a.name)
			}
		}
	}
	name := rapid.SampledFrom(names).Draw(c.rt, "action")
	for _, a := range actions {
		if a.name == name {
			ids := make([]int32, len(a.brokers))
			for i, b := range a.brokers {
				ids[i] = b.id
			}
			id := rapid.SampledFrom(ids).Draw(c.rt, "broker")
			c.rt.Logf("step %d: %s: broker %d", len(c.steps)-1, name, id)
			a.run(c.brokers[id])
			return
		}
	}
}

func (c *modelCluster) unfenced() []*modelBroker {
	var out []*modelBroker
	for _, b := range c.brokers {
		if !c.control.isFenced(b.id) {
			out = append(out, b)
		}
	}
	return out
}

// produce appends one batch at the broker that believes it leads, and
// maybe waits for its fsync, as the produce's WaitAck would start one.
func (c *modelCluster) produce(b *modelBroker) {
	p := b.part
	acks := rapid.SampledFrom([]Acks{AcksAll, AcksLeader}).Draw(c.rt, "acks")
	n := rapid.IntRange(1, 3).Draw(c.rt, "records")
	size := rapid.IntRange(0, 200).Draw(c.rt, "value bytes")
	c.produced++
	records := make([]record.Record, n)
	for i := range records {
		records[i] = record.Record{TimestampDelta: int64(i), Value: append(fmt.Appendf(nil, "batch %d record %d ", c.produced, i), bytes.Repeat([]byte{'v'}, size)...)}
	}
	raw, err := record.Build(record.BuildOptions{FirstTimestamp: modelFirstMillis + int64(c.produced), ProducerID: -1, BaseSequence: -1}, records)
	if err != nil {
		c.rt.Fatalf("Build: %v", err)
	}
	batch, err := record.ValidateProduced(raw, p.ProduceOptions())
	if err != nil {
		c.rt.Fatalf("ValidateProduced: %v", err)
	}
	active := p.Log().ActiveSegment().BaseOffset
	outcome, err := p.Append([]record.Batch{batch}, acks)
	switch {
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrNotEnoughReplicas):
		c.rt.Logf("  refused: %v", err)
		return
	case err != nil:
		c.rt.Fatalf("broker %d: Append: %v", b.id, err)
	}
	h, err := record.ParseHeader(batch.Bytes()) // as stamped by the append
	if err != nil {
		c.rt.Fatalf("%v", err)
	}
	id := batchIdentity{base: h.BaseOffset, last: h.LastOffset(), epoch: h.PartitionLeaderEpoch, crc: h.CRC}
	c.pending = append(c.pending, pendingProduce{part: p, outcome: outcome, acks: acks, batch: id})
	c.rt.Logf("  appended %v at acks %d", id, acks)
	switch {
	case p.Log().ActiveSegment().BaseOffset != active:
		// A roll asks the flusher for a round at once, to seal the rolled
		// segment, and the round fsyncs the whole log: wait for it, so
		// what is durable does not depend on its timing.
		c.fsync(b)
	case rapid.IntRange(0, 3).Draw(c.rt, "fsync (0: at once)") == 0:
		c.fsync(b)
	}
}

// fsync makes the leader's log durable, as the fsync a waiting produce
// asks for does.
func (c *modelCluster) fsync(b *modelBroker) {
	if err := b.part.Log().Sync(context.Background()); err != nil {
		c.rt.Fatalf("broker %d: Sync: %v", b.id, err)
	}
	c.rt.Logf("  broker %d fsynced to %d", b.id, b.part.Log().FlushedOffset())
}

// leaderFor is the partition of the broker b fetches from, once it passes
// the checks a leader's Fetch and OffsetForLeaderEpoch handlers make
// (Manager.Leader, then the leader epoch); nil when the request fails.
func (c *modelCluster) leaderFor(b *modelBroker) *Partition {
	l := c.brokers[b.leader]
	if l.part == nil {
		c.rt.Logf("  broker %d is down", l.id)
		return nil
	}
	p, err := l.manager.Leader(nil, c.topic.Name, 0)
	if err != nil {
		c.rt.Logf("  broker %d: %v", l.id, err)
		return nil
	}
	if epoch := p.LeaderEpoch(); epoch != b.epoch {
		c.rt.Logf("  broker %d is at leader epoch %d, not %d", l.id, epoch, b.epoch)
		return nil
	}
	return p
}

// fetch is one round of the fetcher for the broker: the truncation step if
// it has not truncated under this leader epoch yet, else a fetch, whose
// response is applied now or later.
func (c *modelCluster) fetch(b *modelBroker) {
	if b.diverged {
		c.truncate(b)
		return
	}
	leader := c.leaderFor(b)
	if leader == nil {
		return
	}
	maxBytes := rapid.SampledFrom([]int{1, 300, replicaFetchMaxBytes}).Draw(c.rt, "max bytes")
	offset, err := b.part.fetchOffset(context.Background())
	if err != nil {
		c.rt.Fatalf("broker %d: %v", b.id, err)
	}
	res, err := leader.ReadForFollower(b.id, offset, maxBytes)
	response := &fetchResponse{leader: b.leader, epoch: b.epoch, highWatermark: res.HighWatermark}
	var outOfRange *hotlog.OffsetOutOfRangeError
	switch {
	case errors.As(err, &outOfRange):
		if offset < res.LogStartOffset {
			c.rt.Fatalf("broker %d fetched at %d, below the leader's log start %d: nothing here deletes records", b.id, offset, res.LogStartOffset)
		}
		response.outOfRange = true
	case err != nil:
		c.rt.Fatalf("broker %d: ReadForFollower at %d: %v", b.id, offset, err)
	case res.Section != nil:
		response.records, err = res.Section.ReadAll()
		res.Section.Release()
		if err != nil {
			c.rt.Fatalf("reading the fetched section: %v", err)
		}
	}
	c.rt.Logf("  fetched at %d from broker %d: %d bytes, high watermark %d, out of range %v",
		offset, b.leader, len(response.records), response.highWatermark, response.outOfRange)
	if rapid.IntRange(0, 4).Draw(c.rt, "response delay (4: held back)") == 4 {
		b.inFlight = response
		return
	}
	c.apply(b, response)
}

// arrive applies the broker's delayed fetch response.
func (c *modelCluster) arrive(b *modelBroker) {
	response := b.inFlight
	b.inFlight = nil
	c.apply(b, response)
}

// apply is the fetcher's session.apply for one response.
func (c *modelCluster) apply(b *modelBroker, response *fetchResponse) {
	if response.outOfRange {
		if b.fetching && b.leader == response.leader && b.epoch == response.epoch {
			b.diverged = true
		}
		return
	}
	a, err := b.part.appendFromLeader(response.epoch, response.records, response.highWatermark)
	if err == nil {
		a.expect()
		err = a.finish(context.Background())
	}
	switch {
	case errors.Is(err, errStaleFetch):
		c.rt.Logf("  stale: %v", err)
	case err != nil:
		c.rt.Fatalf("broker %d: applying a fetch from broker %d at epoch %d: %v", b.id, response.leader, response.epoch, err)
	default:
		c.rt.Logf("  broker %d: log end %d, high watermark %d", b.id, b.part.Log().LogEndOffset(), b.part.HighWatermark())
	}
}

// truncate is the fetcher's truncation step (session.truncate) for the
// broker: the leader's end of the follower's newest epoch, then the cut.
func (c *modelCluster) truncate(b *modelBroker) {
	leader := c.leaderFor(b)
	if leader == nil {
		return
	}
	latest := b.part.LatestEpoch()
	answerEpoch, answerEnd := leader.Log().EndOffsetForEpoch(latest)
	offset, done := b.part.divergence(answerEpoch, answerEnd)
	before := b.part.Log().LogEndOffset()
	err := b.part.truncateTo(b.epoch, offset)
	switch {
	case errors.Is(err, errStaleFetch):
		c.rt.Logf("  stale: %v", err)
	case err != nil:
		c.rt.Fatalf("broker %d (epochs %v, high watermark %d) truncating for leader %d (epochs %v) which answered epoch %d end %d for epoch %d: %v",
			b.id, b.part.Log().Epochs(), b.part.HighWatermark(), b.leader, leader.Log().Epochs(), answerEpoch, answerEnd, latest, err)
	default:
		b.diverged = !done
		c.rt.Logf("  leader answered epoch %d end %d for epoch %d: log end %d -> %d", answerEpoch, answerEnd, latest, before, b.part.Log().LogEndOffset())
	}
}

// shrink is the manager's shrinkISRs for the broker's partition, as of
// replica.lag.time.max.ms after the start of an earlier step.
func (c *modelCluster) shrink(b *modelBroker) {
	p := b.part
	r := p.role.Load()
	if len(r.isr) < 2 {
		return
	}
	since := rapid.IntRange(0, len(c.steps)-1).Draw(c.rt, "lagging since step")
	lagging := p.followers.lagging(r.isr, c.steps[since].Add(modelLagTimeMax), modelLagTimeMax)
	c.rt.Logf("  lagging since step %d: %v", since, lagging)
	if len(lagging) == 0 {
		return
	}
	isr := slices.DeleteFunc(slices.Clone(r.isr), func(id int32) bool { return slices.Contains(lagging, id) })
	b.manager.shrinkISR(p, r, isr)
}

// crash stops the broker without a clean shutdown: its partition directory
// is left as a crash leaves it, each .log holding what was fsynced and,
// unless power was lost, more of what was written.
//
// The flusher may be running a round meanwhile (after a roll it seals the
// rolled segment on its own), so the recovery point is copied first, then
// what was fsynced is taken, then the rest: the image never vouches for
// bytes it lacks. Nothing acts on a round that ends during the copy.
func (c *modelCluster) crash(b *modelBroker) {
	mode := rapid.SampledFrom([]string{"process crash", "power loss", "torn write"}).Draw(c.rt, "crash")
	p := b.part
	l := p.Log()
	image := p.dir + ".crashed"
	if err := os.MkdirAll(image, 0o755); err != nil {
		c.rt.Fatalf("%v", err)
	}
	copyFile := func(name string, cut func([]byte) []byte) {
		data, err := os.ReadFile(filepath.Join(p.dir, name))
		if errors.Is(err, os.ErrNotExist) {
			return // a temporary file, renamed meanwhile by the flusher
		}
		if err != nil {
			c.rt.Fatalf("%v", err)
		}
		if err := os.WriteFile(filepath.Join(image, name), cut(data), 0o644); err != nil {
			c.rt.Fatalf("%v", err)
		}
	}
	whole := func(data []byte) []byte { return data }
	const recoveryPoint = "log-checkpoint"
	copyFile(recoveryPoint, whole)

	flushed := l.FlushedOffset()
	durable := batchesBelow(logBatches(c.rt, l), flushed)
	synced := map[string]int64{} // .log file -> bytes fsynced
	for _, s := range l.Segments() {
		name := fmt.Sprintf("%020d.log", s.BaseOffset)
		switch {
		case s.NextOffset <= flushed:
			synced[name] = s.Size
		case s.BaseOffset >= flushed:
			synced[name] = 0
		default:
			section, err := l.Read(flushed, 1)
			if err != nil {
				c.rt.Fatalf("reading at the flushed offset %d: %v", flushed, err)
			}
			synced[name] = section.Position
			section.Release()
		}
	}
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		c.rt.Fatalf("%v", err)
	}
	for _, e := range entries {
		keep, isLog := synced[e.Name()]
		switch {
		case e.Name() == recoveryPoint:
		case isLog && mode == "power loss":
			copyFile(e.Name(), func(data []byte) []byte { return data[:min(keep, int64(len(data)))] })
		case isLog && mode == "torn write":
			copyFile(e.Name(), func(data []byte) []byte {
				keep = min(keep, int64(len(data)))
				return data[:rapid.Int64Range(keep, int64(len(data))).Draw(c.rt, "bytes kept")]
			})
		default:
			copyFile(e.Name(), whole)
		}
	}
	// The process is gone: its waiting produces are never answered.
	c.pending = slices.DeleteFunc(c.pending, func(w pendingProduce) bool { return w.part == p })
	end := l.LogEndOffset()
	c.stop(b)
	if err := os.RemoveAll(p.dir); err != nil {
		c.rt.Fatalf("%v", err)
	}
	if err := os.Rename(image, p.dir); err != nil {
		c.rt.Fatalf("%v", err)
	}
	b.fsynced = durable
	c.rt.Logf("  %s: log end was %d, fsynced to %d", mode, end, flushed)
}

// stop closes the broker's partition and drops its manager.
func (c *modelCluster) stop(b *modelBroker) {
	m, p := b.manager, b.part
	m.alters.Wait()
	m.mu.Lock()
	delete(m.mu.open, partitionKey{c.topic.Name, 0})
	m.mu.Unlock()
	m.closePartition(p, false)
	b.manager, b.part, b.fetching, b.inFlight = nil, nil, false, nil
}

// restart brings a crashed broker back: it registers (a new incarnation,
// which fences the old one if the controller had not), opens its
// partition in the role the controller then gives it, and checks that
// what was fsynced before the crash survived.
func (c *modelCluster) restart(b *modelBroker) {
	c.control.register(b.id)
	c.start(b)
	if got := batchesBelow(logBatches(c.rt, b.part.Log()), batchesEnd(b.fsynced)); !slices.Equal(got, b.fsynced) {
		c.rt.Fatalf("broker %d lost fsynced batches in the crash: had %v, has %v", b.id, b.fsynced, got)
	}
	r := b.part.role.Load()
	c.rt.Logf("  broker %d up: log end %d, leader %d epoch %d isr %v", b.id, b.part.Log().LogEndOffset(), r.leader, r.leaderEpoch, r.isr)
}

// expire is the controller fencing a broker whose heartbeats stopped: it
// is down, or up and cut off (its lease lapsed first).
func (c *modelCluster) expire(b *modelBroker) {
	c.control.fence(b.id)
	p := c.control.snapshot()
	c.rt.Logf("  leader %d epoch %d isr %v", p.Leader, p.LeaderEpoch, p.ISR)
}

// register is a broker that is up registering again (after its session
// expired, or for new producer ids): its lease resumes once its partitions
// follow the metadata of the registration (ingest's register waits for
// WaitReconciled).
func (c *modelCluster) register(b *modelBroker) {
	c.control.register(b.id)
	c.deliver(b)
}

// settle lets what the step started finish: ISR changes in flight commit
// (or fail) at the controller, high watermarks move after fsyncs as the
// manager's advance loop moves them, and produces that can be answered
// now are.
func (c *modelCluster) settle() {
	for _, b := range c.brokers {
		if b.part == nil {
			continue
		}
		b.manager.alters.Wait()
		// One round of Manager.advance.
		m := b.manager
		m.syncedMu.Lock()
		synced := m.synced
		m.synced = map[*Partition]struct{}{}
		m.syncedMu.Unlock()
		for p := range synced {
			p.advanceHighWatermark()
		}
	}
	// A produce is answered once its fsync is done: asked then, WaitAck
	// answers without waiting unless it waits for the replicas, and then
	// it gives up at once on its cancelled context. (A crash drops the
	// produces of the crashed partition.)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	kept := c.pending[:0]
	for _, w := range c.pending {
		if w.part.Log().FlushedOffset() <= w.batch.last {
			kept = append(kept, w)
			continue
		}
		err := w.outcome.WaitAck(cancelled)
		switch {
		case errors.Is(err, context.Canceled):
			kept = append(kept, w)
		case err == nil:
			c.rt.Logf("  acks %d: %v acknowledged", w.acks, w.batch)
			if w.acks == AcksAll {
				c.acked = append(c.acked, w.batch)
			}
		default:
			c.rt.Logf("  acks %d: %v failed: %v", w.acks, w.batch, err)
		}
	}
	c.pending = kept
}

// check asserts the properties (see TestReplicationProperties).
func (c *modelCluster) check() {
	logs := map[int32][]batchIdentity{}
	for _, b := range c.brokers {
		if b.part != nil {
			logs[b.id] = logBatches(c.rt, b.part.Log())
		}
	}
	for _, b := range c.brokers {
		if b.part == nil {
			continue
		}
		batches := logs[b.id]
		if got := batchesBelow(batches, b.exposed); !slices.Equal(got, b.committed) {
			c.rt.Fatalf("broker %d once exposed high watermark %d over %v; below it now: %v", b.id, b.exposed, b.committed, got)
		}
		hwm := b.part.HighWatermark()
		if hwm < b.lastHighWatermark {
			c.rt.Fatalf("broker %d's high watermark went back from %d to %d", b.id, b.lastHighWatermark, hwm)
		}
		if end := b.part.Log().LogEndOffset(); hwm > end {
			c.rt.Fatalf("broker %d's high watermark %d is past its log end %d", b.id, hwm, end)
		}
		b.lastHighWatermark = hwm
		if hwm > b.exposed {
			b.exposed, b.committed = hwm, batchesBelow(batches, hwm)
		}
	}
	assignment := c.control.snapshot()
	for _, id := range assignment.ISR {
		batches, up := logs[id]
		if !up {
			continue
		}
		for _, a := range c.acked {
			if !slices.Contains(batches, a) {
				c.rt.Fatalf("ISR member %d lacks %v, acknowledged at acks=all; it holds %v", id, a, batches)
			}
		}
	}
	leader, up := logs[assignment.Leader]
	if !up {
		return
	}
	for _, b := range c.brokers {
		if b.part == nil {
			continue
		}
		hwm := b.part.HighWatermark()
		if got, want := batchesBelow(logs[b.id], hwm), batchesBelow(leader, hwm); !slices.Equal(got, want) || batchesEnd(want) < hwm {
			c.rt.Fatalf("below its high watermark %d broker %d holds %v, the leader %d %v", hwm, b.id, got, assignment.Leader, want)
		}
	}
}

// close stops every broker that is up.
func (c *modelCluster) close() {
	for _, b := range c.brokers {
		if b.part != nil {
			c.stop(b)
		}
	}
}

// logBatches reads every batch of l.
func logBatches(rt *rapid.T, l *hotlog.Log) []batchIdentity {
	var out []batchIdentity
	for offset, end := l.LogStartOffset(), l.LogEndOffset(); offset < end; {
		data, err := l.ReadBytes(offset, 1<<20)
		if err != nil {
			rt.Fatalf("reading %s at %d: %v", l.Dir(), offset, err)
		}
		_, headers, err := record.Split(data)
		if err != nil || len(headers) == 0 {
			rt.Fatalf("reading %s at %d: %d batches, %v", l.Dir(), offset, len(headers), err)
		}
		for _, h := range headers {
			out = append(out, batchIdentity{base: h.BaseOffset, last: h.LastOffset(), epoch: h.PartitionLeaderEpoch, crc: h.CRC})
		}
		offset = headers[len(headers)-1].NextOffset()
	}
	return out
}

// batchesBelow is the batches that start below offset.
func batchesBelow(batches []batchIdentity, offset int64) []batchIdentity {
	i := 0
	for i < len(batches) && batches[i].base < offset {
		i++
	}
	return slices.Clone(batches[:i])
}

// batchesEnd is the offset after the last batch, 0 for none.
func batchesEnd(batches []batchIdentity) int64 {
	if len(batches) == 0 {
		return 0
	}
	return batches[len(batches)-1].last + 1
}

// modelController is the metadata group's controller for the one
// partition: meta's FenceBroker, RegisterBroker and electLeader
// (meta/cluster.go) and AlterPartition (meta/topics.go), applied at once.
// The Manager's alterISR proposes from its own goroutine, hence the lock.
type modelController struct {
	mu        sync.Mutex
	partition meta.Partition
	fenced    map[int32]bool
	// epochs are the brokers' incarnation epochs; next the next one.
	epochs map[int32]int64
	next   int64
}

func (c *modelController) nextEpoch() int64 {
	c.next++
	return c.next
}

func (c *modelController) snapshot() meta.Partition {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.partition
	p.Replicas, p.ISR = slices.Clone(p.Replicas), slices.Clone(p.ISR)
	return p
}

func (c *modelController) isFenced(id int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fenced[id]
}

// lease is the broker's leadership lease: it holds while the controller
// has not fenced the broker, which it does only after the lease lapsed.
func (c *modelController) lease(id int32) error {
	if c.isFenced(id) {
		return fmt.Errorf("broker %d: the leadership lease lapsed", id)
	}
	return nil
}

func (c *modelController) incarnation(id int32) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epochs[id]
}

// fence is FenceBroker: the broker leaves the ISR unless it is the last
// member, and a partition it led gets the next leader from the ISR.
func (c *modelController) fence(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fenceLocked(id)
}

func (c *modelController) fenceLocked(id int32) {
	if c.fenced[id] {
		return
	}
	c.fenced[id] = true
	p := &c.partition
	if p.Leader != id && !slices.Contains(p.ISR, id) {
		return
	}
	if len(p.ISR) > 1 {
		p.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == id })
	}
	if p.Leader == id {
		p.Leader = c.electLeaderLocked(id)
		p.LeaderEpoch++
	}
	p.PartitionEpoch++
}

// electLeaderLocked is electLeader: the first replica in the ISR, not
// excluded and not fenced.
func (c *modelController) electLeaderLocked(excluded int32) int32 {
	for _, r := range c.partition.Replicas {
		if r != excluded && slices.Contains(c.partition.ISR, r) && !c.fenced[r] {
			return r
		}
	}
	return meta.NoLeader
}

// register is RegisterBroker: a previous incarnation not yet fenced is
// fenced first; the new one leads the partition if it has no leader and
// its ISR lists the broker.
func (c *modelController) register(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fenceLocked(id)
	c.fenced[id] = false
	c.epochs[id] = c.nextEpoch()
	if p := &c.partition; p.Leader == meta.NoLeader && slices.Contains(p.ISR, id) {
		p.Leader = id
		p.LeaderEpoch++
		p.PartitionEpoch++
	}
}

// alterPartition is AlterPartition's apply.
func (c *modelController) alterPartition(cmd *meta.AlterPartition) (meta.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := &c.partition
	if cmd.Topic != p.Topic || cmd.Partition != p.Partition {
		return meta.Result{}, fmt.Errorf("%w: %s-%d", meta.ErrUnknownPartition, cmd.Topic, cmd.Partition)
	}
	if cmd.PartitionEpoch != p.PartitionEpoch {
		return meta.Result{}, fmt.Errorf("%w: at %d, not %d", meta.ErrStalePartitionEpoch, p.PartitionEpoch, cmd.PartitionEpoch)
	}
	if len(cmd.ISR) == 0 {
		return meta.Result{}, fmt.Errorf("%w: empty ISR", meta.ErrIneligibleReplica)
	}
	for i, r := range cmd.ISR {
		if slices.Contains(cmd.ISR[:i], r) || !slices.Contains(p.Replicas, r) || c.fenced[r] {
			return meta.Result{}, fmt.Errorf("%w: %d in %v", meta.ErrIneligibleReplica, r, cmd.ISR)
		}
	}
	if cmd.Leader != meta.NoLeader && !slices.Contains(cmd.ISR, cmd.Leader) {
		return meta.Result{}, fmt.Errorf("%w: leader %d is not in the ISR", meta.ErrIneligibleReplica, cmd.Leader)
	}
	if cmd.Leader == p.Leader && slices.Equal(cmd.ISR, p.ISR) {
		return meta.Result{Epoch: int64(p.PartitionEpoch)}, nil
	}
	if cmd.Leader != p.Leader {
		p.Leader = cmd.Leader
		p.LeaderEpoch++
	}
	p.ISR = slices.Clone(cmd.ISR)
	p.PartitionEpoch++
	return meta.Result{Epoch: int64(p.PartitionEpoch)}, nil
}

// modelMetadata is the Manager's Metadata: proposals go to the
// controller. A *meta.State cannot be built outside meta, and nothing the
// test calls reads one (the partitions are opened and given roles
// directly, and a follower never fetches below the log start, the only
// read of the state ReadForFollower makes), so State is nil.
type modelMetadata struct{ control *modelController }

func (m modelMetadata) State() *meta.State { return nil }

func (m modelMetadata) Propose(_ context.Context, cmd meta.Command) (meta.Result, error) {
	alter, ok := cmd.(*meta.AlterPartition)
	if !ok {
		return meta.Result{}, fmt.Errorf("the test's controller takes only AlterPartition, not %T", cmd)
	}
	return m.control.alterPartition(alter)
}

func (m modelMetadata) Watch(meta.WatchOptions) *meta.Watch { return nil }
