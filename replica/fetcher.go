package replica

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/interbroker"
	"github.com/stratalog/strata/meta"
)

// The fetcher copies leaders' logs into this broker's follower replicas, as
// Kafka's replica fetcher threads do: one session per leader broker, each
// a goroutine sending Fetch requests with this broker's replica id for
// every partition it follows there, at the follower's log end (made
// durable first: the leader counts it as held, Partition.fetchOffset) and
// leader epoch. Before the first fetch under a leader epoch a partition
// asks the leader where its log and the leader's diverge
// (OffsetForLeaderEpoch with its newest epoch, KIP-101 and KIP-279) and
// truncates there; never below its high watermark but for what an unclean
// election gave up (Partition.truncateTo). A follower behind the leader's
// local log start restarts its log at that start (KIP-405): what is below
// is in the bucket, so a new replica copies the hot tail only.
//
// Goroutines: one per session, owned by the fetcher; a session ends when
// it has no partitions left or the manager stops.

// Fetch sizes and waits of a follower's fetch, Kafka's defaults:
// replica.fetch.max.bytes, replica.fetch.response.max.bytes,
// replica.fetch.wait.max.ms and replica.fetch.backoff.ms.
const (
	replicaFetchMaxBytes         = 1 << 20
	replicaFetchResponseMaxBytes = 10 << 20
	replicaFetchWaitMax          = 500 * time.Millisecond
	replicaFetchBackoff          = time.Second
	// partitionRetryBackoff is how long a partition whose leader refused it
	// (not the leader, another epoch) waits before it is fetched again;
	// the metadata usually brings its new role first.
	partitionRetryBackoff = 200 * time.Millisecond
)

type fetcher struct {
	m  *Manager
	mu sync.Mutex
	// sessions maps a leader broker to the session following it; follows
	// maps each followed partition to its session.
	sessions map[int32]*session
	follows  map[*Partition]*session
	ctx      context.Context
	wg       sync.WaitGroup
}

func newFetcher(m *Manager) *fetcher {
	return &fetcher{m: m, sessions: map[int32]*session{}, follows: map[*Partition]*session{}}
}

// start sets the context the sessions run under.
func (f *fetcher) start(ctx context.Context) { f.ctx = ctx }

// stop waits for every session to end (its context must be over).
func (f *fetcher) stop() { f.wg.Wait() }

// follow makes p fetch from leader at leader epoch epoch, checking for
// divergence first. A partition without a leader (NoLeader) fetches from
// nobody until it has one.
func (f *fetcher) follow(p *Partition, leader, epoch int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.follows[p]; s != nil && s.leader != leader {
		f.removeLocked(p, s)
	}
	if leader < 0 || f.ctx == nil {
		return
	}
	s := f.sessions[leader]
	if s == nil {
		s = &session{f: f, leader: leader, parts: map[*Partition]*followState{}, changed: make(chan struct{}, 1)}
		ctx, cancel := context.WithCancel(f.ctx)
		s.cancel = cancel
		f.sessions[leader] = s
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			s.run(ctx)
		}()
	}
	f.follows[p] = s
	s.set(p, epoch)
}

// unfollow stops fetching for p.
func (f *fetcher) unfollow(p *Partition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.follows[p]; s != nil {
		f.removeLocked(p, s)
	}
}

func (f *fetcher) removeLocked(p *Partition, s *session) {
	delete(f.follows, p)
	if s.remove(p) == 0 {
		s.cancel()
		delete(f.sessions, s.leader)
	}
}

// session follows one leader broker.
type session struct {
	f      *fetcher
	leader int32
	cancel context.CancelFunc
	// changed is signalled when a partition joins or changes epoch.
	changed chan struct{}

	mu    sync.Mutex
	parts map[*Partition]*followState
	// conn talks to the leader; replaced when its address changes. Owned
	// by run.
	conn *interbroker.Conn
}

// followState is one followed partition's place in its session.
type followState struct {
	epoch int32
	// diverged is set until the partition has asked the leader where their
	// logs diverge under this epoch and truncated there.
	diverged  bool
	waitUntil time.Time
}

func (s *session) set(p *Partition, epoch int32) {
	s.mu.Lock()
	if st := s.parts[p]; st == nil || st.epoch != epoch {
		s.parts[p] = &followState{epoch: epoch, diverged: true}
	}
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *session) remove(p *Partition) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.parts, p)
	return len(s.parts)
}

// followed is one partition of a fetch round.
type followed struct {
	p     *Partition
	state followState
}

// ready returns the partitions due a fetch, and when the next waiting one
// is due.
func (s *session) ready(now time.Time) (out []followed, next time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, st := range s.parts {
		if now.Before(st.waitUntil) {
			if next.IsZero() || st.waitUntil.Before(next) {
				next = st.waitUntil
			}
			continue
		}
		out = append(out, followed{p, *st})
	}
	return out, next
}

// update changes a partition's state if it still follows at epoch.
func (s *session) update(p *Partition, epoch int32, change func(*followState)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.parts[p]; st != nil && st.epoch == epoch {
		change(st)
	}
}

func (s *session) backOff(p *Partition, epoch int32) {
	s.update(p, epoch, func(st *followState) { st.waitUntil = time.Now().Add(partitionRetryBackoff) })
}

func (s *session) run(ctx context.Context) {
	defer func() {
		if s.conn != nil {
			s.conn.Close()
		}
	}()
	log := s.f.m.log.With("leader", s.leader)
	failures := 0
	for ctx.Err() == nil {
		parts, next := s.ready(time.Now())
		if len(parts) == 0 {
			wait := time.Hour
			if !next.IsZero() {
				wait = time.Until(next)
			}
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
			case <-s.changed:
			case <-timer.C:
			}
			timer.Stop()
			continue
		}
		err := s.round(ctx, parts)
		if err == nil {
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		failures++
		if failures == 1 || failures%30 == 0 {
			log.Warn("fetching from the leader failed; retrying", "error", err, "failures", failures)
		}
		timer := time.NewTimer(replicaFetchBackoff)
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
		timer.Stop()
	}
}

// round truncates the partitions that need it, then fetches once for all.
func (s *session) round(ctx context.Context, parts []followed) error {
	leader, err := s.leaderConn()
	if err != nil {
		return err
	}
	var diverged []followed
	for _, f := range parts {
		if f.state.diverged {
			diverged = append(diverged, f)
		}
	}
	if len(diverged) > 0 {
		return s.truncate(ctx, leader, diverged)
	}
	return s.fetch(ctx, leader, parts)
}

// InterBrokerListener names the listener a broker registers for its
// followers' fetches when it has one apart from the clients'.
const InterBrokerListener = "REPLICATION"

// leaderConn is the connection to the leader, at the address the metadata
// gives it now: its InterBrokerListener address, else its listener named
// Config.Listener, else its first.
func (s *session) leaderConn() (*interbroker.Conn, error) {
	b, ok := s.f.m.deps.Meta.State().Broker(s.leader)
	if !ok || len(b.Listeners) == 0 {
		return nil, fmt.Errorf("replica: leader %d is not registered", s.leader)
	}
	l := b.Listeners[0]
	for _, name := range []string{s.f.m.config.Listener, InterBrokerListener} {
		if i := slices.IndexFunc(b.Listeners, func(l meta.Listener) bool { return l.Name == name }); i >= 0 {
			l = b.Listeners[i]
		}
	}
	addr := net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
	if s.conn == nil || addr != s.conn.Addr() {
		if s.conn != nil {
			s.conn.Close()
		}
		dialer := s.f.m.config.Dialer
		dialer.ClientID = "strata-replica-" + strconv.Itoa(int(s.f.m.config.BrokerID))
		s.conn = dialer.Open(addr)
	}
	return s.conn, nil
}

// truncate asks the leader, for each partition, where the log of its
// newest epoch ends there, and truncates at the divergence (KIP-279: the
// smaller of the leader's end for the epoch it answers with and this log's
// own end for that epoch); a partition whose log never had that epoch is
// asked about again in the next round (divergence).
func (s *session) truncate(ctx context.Context, leader *interbroker.Conn, parts []followed) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = s.f.m.config.BrokerID
	byTopic := map[string]int{}
	for _, f := range parts {
		i, ok := byTopic[f.p.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[f.p.topic] = i
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = f.p.topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition = f.p.index
		rp.CurrentLeaderEpoch = f.state.epoch
		rp.LeaderEpoch = f.p.LatestEpoch()
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := leader.Request(ctx, req)
	if err != nil {
		return err
	}
	answers := map[partitionKey]kmsg.OffsetForLeaderEpochResponseTopicPartition{}
	for _, t := range resp.(*kmsg.OffsetForLeaderEpochResponse).Topics {
		for _, rp := range t.Partitions {
			answers[partitionKey{t.Topic, rp.Partition}] = rp
		}
	}
	for _, f := range parts {
		answer, ok := answers[partitionKey{f.p.topic, f.p.index}]
		if !ok || answer.ErrorCode != 0 {
			s.backOff(f.p, f.state.epoch)
			continue
		}
		offset, done := f.p.divergence(answer.LeaderEpoch, answer.EndOffset)
		err := f.p.truncateTo(f.state.epoch, offset)
		switch {
		case errors.Is(err, errStaleFetch):
		case err != nil:
			s.f.m.log.Error("truncating a follower", "topic", f.p.topic, "partition", f.p.index, "error", err)
			s.backOff(f.p, f.state.epoch)
		default:
			s.update(f.p, f.state.epoch, func(st *followState) { st.diverged = !done })
		}
	}
	return nil
}

// divergence is where p's log leaves the leader's, given the leader's
// answer to OffsetForLeaderEpoch for p's newest epoch: the largest epoch at
// or below it that the leader knows and where that epoch ends there
// (KIP-279: the smaller of that end and this log's own end for the epoch),
// and done. When this log never had the epoch answered, it ends where its
// own epoch below that one ended, and done is false: the truncation goes
// on with another question for this log's newest epoch then, lower each
// round (KIP-279's rounds; one round kept records of an epoch the leader
// never had, at offsets where the leader holds others). A log without
// epochs keeps its end.
func (p *Partition) divergence(leaderEpoch int32, leaderEnd int64) (offset int64, done bool) {
	offset = p.log.LogEndOffset()
	if p.LatestEpoch() < 0 {
		return offset, true
	}
	if leaderEpoch == hotlog.UndefinedEpoch {
		// The leader holds no epoch at or below ours: nothing of our log
		// is known to be its, down to its log start.
		return min(offset, max(leaderEnd, p.highWatermark.Load())), true
	}
	ownEpoch, ownEnd := p.log.EndOffsetForEpoch(leaderEpoch)
	if ownEpoch != leaderEpoch {
		return min(offset, ownEnd), false
	}
	return min(offset, leaderEnd, ownEnd), true
}

// fetch sends one Fetch for parts and applies the answer.
func (s *session) fetch(ctx context.Context, leader *interbroker.Conn, parts []followed) error {
	self := s.f.m.config.BrokerID
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = self
	req.ReplicaState.ID = self
	req.ReplicaState.Epoch = s.f.m.deps.Incarnation()
	req.MaxWaitMillis = int32(replicaFetchWaitMax / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = replicaFetchResponseMaxBytes
	req.SessionEpoch = -1
	byTopic := map[uuid.UUID]int{}
	asked := map[partitionKey]followed{}
	throttled := map[partitionKey]bool{}
	spent := s.f.m.followerThrottle.Debt(time.Now()) > 0
	for _, f := range parts {
		key := partitionKey{f.p.topic, f.p.index}
		offset, err := f.p.fetchOffset(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.f.m.log.Warn("making a follower's log durable before fetching", "topic", f.p.topic, "partition", f.p.index, "error", err)
			s.backOff(f.p, f.state.epoch)
			continue
		}
		if f.p.followerThrottled() {
			if spent {
				continue // fetched again once the throttle allows
			}
			throttled[key] = true
		}
		i, ok := byTopic[f.p.topicID]
		if !ok {
			i = len(req.Topics)
			byTopic[f.p.topicID] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = f.p.topic, f.p.topicID
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = f.p.index
		rp.CurrentLeaderEpoch = f.state.epoch
		rp.FetchOffset = offset
		rp.LastFetchedEpoch = f.p.LatestEpoch()
		rp.LogStartOffset = f.p.log.LogStartOffset()
		rp.PartitionMaxBytes = replicaFetchMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		asked[key] = f
	}
	if len(asked) == 0 {
		// Every partition due waits for the follower throttle, or backs
		// off after a failed fsync.
		timer := time.NewTimer(s.f.m.followerThrottle.Debt(time.Now()))
		defer timer.Stop()
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
		return nil
	}
	resp, err := leader.Request(ctx, req)
	if err != nil {
		return err
	}
	fr := resp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
		return err
	}
	names := map[uuid.UUID]string{}
	for _, f := range parts {
		names[f.p.topicID] = f.p.topic
	}
	// The response aliases the connection's buffer until its next request:
	// a partition restarting at the leader's local log start asks for that
	// start once the appends are done with the response.
	var appended []fetchedAppend
	var restarts []followed
	for _, t := range fr.Topics {
		name := t.Topic
		if req.Version >= 13 {
			name = names[t.TopicID]
		}
		for _, rp := range t.Partitions {
			key := partitionKey{name, rp.Partition}
			f, ok := asked[key]
			if !ok {
				continue
			}
			if throttled[key] {
				s.f.m.followerThrottle.Record(float64(len(rp.RecordBatches)), time.Now())
				s.f.m.metrics.throttledBytes.WithLabelValues("follower").Add(float64(len(rp.RecordBatches)))
			}
			if rp.ErrorCode == kerr.OffsetMovedToTieredStorage.Code {
				restarts = append(restarts, f)
				continue
			}
			if a, ok := s.apply(f, rp); ok {
				appended = append(appended, a)
			}
		}
	}
	// Every partition appended first, then the waits registered, then
	// waited for: the appends' fsyncs share rounds.
	for i := range appended {
		appended[i].append.expect()
	}
	for _, a := range appended {
		s.finish(ctx, a)
	}
	for _, f := range restarts {
		if ctx.Err() != nil {
			return nil // the fetcher stops
		}
		s.applied(f, s.startAtLocalLogStart(ctx, f.p, f.state.epoch))
	}
	return nil
}

// fetchedAppend is one partition's records of a fetch response, appended
// and waiting to be durable.
type fetchedAppend struct {
	f              followed
	append         leaderAppend
	leaderLogStart int64
}

// apply takes one partition's part of a fetch response. Records are
// appended and returned for finish, with ok.
func (s *session) apply(f followed, rp kmsg.FetchResponseTopicPartition) (_ fetchedAppend, ok bool) {
	p, epoch := f.p, f.state.epoch
	var err error
	switch code := rp.ErrorCode; {
	case code == 0:
		var a leaderAppend
		if a, err = p.appendFromLeader(epoch, rp.RecordBatches, rp.HighWatermark); err == nil {
			return fetchedAppend{f: f, append: a, leaderLogStart: rp.LogStartOffset}, true
		}
	case code == kerr.OffsetOutOfRange.Code && p.log.LogEndOffset() < rp.LogStartOffset:
		err = p.resetTo(epoch, rp.LogStartOffset, nil)
	case code == kerr.OffsetOutOfRange.Code:
		// Past the leader's log end: the logs diverge.
		s.update(p, epoch, func(st *followState) { st.diverged = true })
	default:
		s.backOff(p, epoch)
		return fetchedAppend{}, false
	}
	s.applied(f, err)
	return fetchedAppend{}, false
}

// finish waits for an appended partition to be durable, then follows the
// leader's log start.
func (s *session) finish(ctx context.Context, a fetchedAppend) {
	p := a.f.p
	err := a.append.finish(ctx)
	if ctx.Err() != nil {
		return // the fetcher stops
	}
	if err == nil && a.leaderLogStart > p.log.LogStartOffset() {
		// The leader's retention or DeleteRecords moved its log start: its
		// hot log's (ReadForFollower). On a tiered partition what is below
		// that is in the bucket (local retention deletes only what is
		// tiered) or deleted (DeleteRecords).
		_, err = p.log.DeleteBefore(min(a.leaderLogStart, p.log.LogEndOffset()))
	}
	s.applied(a.f, err)
}

// applied backs a partition off after what applying a fetch to it
// returned, unless that was nothing or a changed leadership.
func (s *session) applied(f followed, err error) {
	switch {
	case err == nil, errors.Is(err, errStaleFetch):
	default:
		s.f.m.log.Warn("applying a fetch from the leader", "topic", f.p.topic, "partition", f.p.index, "error", err)
		s.backOff(f.p, f.state.epoch)
	}
}

// startAtLocalLogStart restarts p's log at the leader's local log start
// (ListOffsets, earliest local), with the leader epoch of that offset.
func (s *session) startAtLocalLogStart(ctx context.Context, p *Partition, epoch int32) error {
	leader, err := s.leaderConn()
	if err != nil {
		return err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = s.f.m.config.BrokerID
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = p.topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = p.index
	rp.CurrentLeaderEpoch = epoch
	rp.Timestamp = timestampEarliestLocal
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	resp, err := leader.Request(ctx, req)
	if err != nil {
		return err
	}
	lr := resp.(*kmsg.ListOffsetsResponse)
	if len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
		return fmt.Errorf("replica: the leader's ListOffsets answer names %d topics", len(lr.Topics))
	}
	answer := lr.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(answer.ErrorCode); err != nil {
		return fmt.Errorf("replica: the leader's local log start: %w", err)
	}
	var epochs []hotlog.EpochEntry
	if answer.LeaderEpoch >= 0 {
		epochs = []hotlog.EpochEntry{{Epoch: answer.LeaderEpoch, StartOffset: answer.Offset}}
	}
	return p.resetTo(epoch, answer.Offset, epochs)
}

// timestampEarliestLocal is ListOffsets' timestamp for the local log start
// (KIP-405).
const timestampEarliestLocal = -4
