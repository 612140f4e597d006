package ingest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/group"
	"github.com/stratalog/strata/meta"
)

// The group APIs' cases for TestHandlersAtAdvertisedVersions.
func init() {
	handlerCases[8] = checkOffsetCommit
	handlerCases[9] = checkOffsetFetch
	handlerCases[10] = checkFindCoordinator
	handlerCases[11] = checkJoinGroup
	handlerCases[12] = checkHeartbeat
	handlerCases[13] = checkLeaveGroup
	handlerCases[14] = checkSyncGroup
	handlerCases[15] = checkDescribeGroups
	handlerCases[16] = checkListGroups
	handlerCases[42] = checkDeleteGroups
	handlerCases[47] = checkOffsetDelete
}

// subscription is a consumer protocol subscription to topics.
func subscription(topics ...string) []byte {
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = topics
	return md.AppendTo(nil)
}

// joinAt joins group h.name as a new single member with JoinGroup at
// version, doing the member-id-required round trip where the version has
// it, and returns the member id and generation.
func joinAt(h *handlerTest, version int16, topics ...string) (string, int32) {
	h.t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = h.name, 10000, 10000, "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", subscription(topics...)
	req.Protocols = append(req.Protocols, p)
	resp := h.client.request(req, version).(*kmsg.JoinGroupResponse)
	if version >= 4 {
		wantCode(h.t, "first join", resp.ErrorCode, kerr.MemberIDRequired)
		if resp.MemberID == "" {
			h.t.Fatal("MEMBER_ID_REQUIRED without a member id")
		}
		req.MemberID = resp.MemberID
		resp = h.client.request(req, version).(*kmsg.JoinGroupResponse)
	}
	wantCode(h.t, "join", resp.ErrorCode, nil)
	if resp.LeaderID != resp.MemberID || len(resp.Members) != 1 || resp.Generation != 1 || resp.Protocol == nil || *resp.Protocol != "range" {
		h.t.Fatalf("join answered %+v", resp)
	}
	return resp.MemberID, resp.Generation
}

// syncAt completes the rebalance of a single-member group, assigning the
// member assignment, with SyncGroup at version.
func syncAt(h *handlerTest, version int16, member string, generation int32, assignment []byte) []byte {
	h.t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.Generation, req.MemberID = h.name, generation, member
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = member, assignment
	req.GroupAssignment = append(req.GroupAssignment, a)
	resp := h.client.request(req, version).(*kmsg.SyncGroupResponse)
	wantCode(h.t, "sync", resp.ErrorCode, nil)
	return resp.MemberAssignment
}

// joinStable makes a stable single-member group subscribed to topics.
func joinStable(h *handlerTest, topics ...string) (string, int32) {
	h.t.Helper()
	member, generation := joinAt(h, 9, topics...)
	syncAt(h, 5, member, generation, []byte("assignment"))
	return member, generation
}

func checkFindCoordinator(h *handlerTest, version int16) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = h.name
	req.CoordinatorKeys = []string{h.name, h.name + "-other"}
	resp := h.client.request(req, version).(*kmsg.FindCoordinatorResponse)
	if version < 4 {
		wantCode(h.t, "find coordinator", resp.ErrorCode, nil)
		if resp.NodeID != h.broker.config.BrokerID || resp.Port != 9092 {
			h.t.Fatalf("coordinator %+v", resp)
		}
		return
	}
	if len(resp.Coordinators) != 2 {
		h.t.Fatalf("%d coordinators for 2 keys", len(resp.Coordinators))
	}
	for _, c := range resp.Coordinators {
		wantCode(h.t, "find coordinator "+c.Key, c.ErrorCode, nil)
		if c.NodeID != h.broker.config.BrokerID {
			h.t.Fatalf("coordinator %+v", c)
		}
	}
	req.CoordinatorType = 1
	wantCode(h.t, "transaction coordinator", h.client.request(req, version).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode, kerr.TransactionalIDAuthorizationFailed)
}

func checkJoinGroup(h *handlerTest, version int16) {
	member, generation := joinAt(h, version, "t")
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = h.name, member, 10000, 10000, "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", subscription("t")
	req.Protocols = append(req.Protocols, p)
	// A retried join before the sync is answered again.
	resp := h.client.request(req, version).(*kmsg.JoinGroupResponse)
	wantCode(h.t, "retried join", resp.ErrorCode, nil)
	if resp.Generation != generation || resp.MemberID != member || len(resp.Members) != 1 {
		h.t.Fatalf("retried join answered %+v", resp)
	}
	// Once stable, the leader joining again starts a rebalance that
	// completes at once with the next generation.
	syncAt(h, 5, member, generation, nil)
	resp = h.client.request(req, version).(*kmsg.JoinGroupResponse)
	wantCode(h.t, "rejoin", resp.ErrorCode, nil)
	if resp.Generation != generation+1 || resp.MemberID != member {
		h.t.Fatalf("rejoin answered %+v", resp)
	}
	req.SessionTimeoutMillis = 1
	wantCode(h.t, "tiny session timeout", h.client.request(req, version).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidSessionTimeout)
	req.SessionTimeoutMillis = 10000
	req.ProtocolType = "connect"
	wantCode(h.t, "other protocol type", h.client.request(req, version).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol)
	req.ProtocolType, req.MemberID = "consumer", "nobody"
	wantCode(h.t, "unknown member", h.client.request(req, version).(*kmsg.JoinGroupResponse).ErrorCode, kerr.UnknownMemberID)
}

func checkSyncGroup(h *handlerTest, version int16) {
	member, generation := joinAt(h, 9, "t")
	if got := syncAt(h, version, member, generation, []byte("mine")); string(got) != "mine" {
		h.t.Fatalf("assignment %q, want %q", got, "mine")
	}
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.Generation, req.MemberID = h.name, generation+1, member
	wantCode(h.t, "other generation", h.client.request(req, version).(*kmsg.SyncGroupResponse).ErrorCode, kerr.IllegalGeneration)
	req.Generation, req.MemberID = generation, "nobody"
	wantCode(h.t, "unknown member", h.client.request(req, version).(*kmsg.SyncGroupResponse).ErrorCode, kerr.UnknownMemberID)
}

func checkHeartbeat(h *handlerTest, version int16) {
	member, generation := joinStable(h, "t")
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.Generation, req.MemberID = h.name, generation, member
	wantCode(h.t, "heartbeat", h.client.request(req, version).(*kmsg.HeartbeatResponse).ErrorCode, nil)
	req.Generation = generation + 1
	wantCode(h.t, "other generation", h.client.request(req, version).(*kmsg.HeartbeatResponse).ErrorCode, kerr.IllegalGeneration)
	req.Generation, req.MemberID = generation, "nobody"
	wantCode(h.t, "unknown member", h.client.request(req, version).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
}

func checkLeaveGroup(h *handlerTest, version int16) {
	member, _ := joinStable(h, "t")
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group, req.MemberID = h.name, member
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = member
	req.Members = append(req.Members, m)
	resp := h.client.request(req, version).(*kmsg.LeaveGroupResponse)
	wantCode(h.t, "leave", resp.ErrorCode, nil)
	if version >= 3 {
		wantCode(h.t, "leave member", resp.Members[0].ErrorCode, nil)
	}
	again := h.client.request(req, version).(*kmsg.LeaveGroupResponse)
	if version >= 3 {
		wantCode(h.t, "leave twice", again.Members[0].ErrorCode, kerr.UnknownMemberID)
	} else {
		wantCode(h.t, "leave twice", again.ErrorCode, kerr.UnknownMemberID)
	}
	// Without members or committed offsets the group is gone from memory,
	// and described as Kafka describes unknown groups.
	if d := describeOne(h); d.State != "Dead" {
		h.t.Fatalf("state after the last member left: %s", d.State)
	}
}

func describeOne(h *handlerTest) kmsg.DescribeGroupsResponseGroup {
	h.t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{h.name}
	return h.client.request(req, 5).(*kmsg.DescribeGroupsResponse).Groups[0]
}

func checkDescribeGroups(h *handlerTest, version int16) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{h.name}
	if g := h.client.request(req, version).(*kmsg.DescribeGroupsResponse).Groups[0]; g.State != "Dead" || g.ErrorCode != 0 {
		h.t.Fatalf("unknown group described as %+v", g)
	}
	member, _ := joinStable(h, "t")
	g := h.client.request(req, version).(*kmsg.DescribeGroupsResponse).Groups[0]
	wantCode(h.t, "describe", g.ErrorCode, nil)
	if g.State != "Stable" || g.Protocol != "range" || g.ProtocolType != "consumer" || len(g.Members) != 1 ||
		g.Members[0].MemberID != member || string(g.Members[0].MemberAssignment) != "assignment" || g.Members[0].ClientHost == "" {
		h.t.Fatalf("described as %+v", g)
	}
}

func checkListGroups(h *handlerTest, version int16) {
	joinStable(h, "t")
	req := kmsg.NewPtrListGroupsRequest()
	listed := func() map[string]kmsg.ListGroupsResponseGroup {
		resp := h.client.request(req, version).(*kmsg.ListGroupsResponse)
		wantCode(h.t, "list", resp.ErrorCode, nil)
		out := map[string]kmsg.ListGroupsResponseGroup{}
		for _, g := range resp.Groups {
			out[g.Group] = g
		}
		return out
	}
	if g, ok := listed()[h.name]; !ok || g.ProtocolType != "consumer" || (version >= 4 && g.GroupState != "Stable") {
		h.t.Fatalf("listed as %+v (present %v)", g, ok)
	}
	if version < 4 {
		return
	}
	req.StatesFilter = []string{"empty"}
	if _, ok := listed()[h.name]; ok {
		h.t.Fatal("a stable group listed under the Empty filter")
	}
	req.StatesFilter = []string{"stable"}
	if _, ok := listed()[h.name]; !ok {
		h.t.Fatal("a stable group missing under the Stable filter")
	}
}

// commitSimple commits offset for partitions 0..n-1 of topic from outside
// any generation with OffsetCommit v8.
func commitSimple(h *handlerTest, topic string, partitions int32, offset int64) {
	h.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = h.name, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, offset, 0
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	for _, p := range h.client.request(req, 8).(*kmsg.OffsetCommitResponse).Topics[0].Partitions {
		wantCode(h.t, "commit", p.ErrorCode, nil)
	}
}

func checkOffsetCommit(h *handlerTest, version int16) {
	topic := h.topic(3, nil)
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = h.name, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic.Name
	for _, p := range []int32{0, 1, 7, 2} {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, 42, 3, kmsg.StringPtr("m")
		if p == 2 {
			rp.Offset = -1
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	partitions := h.client.request(req, version).(*kmsg.OffsetCommitResponse).Topics[0].Partitions
	wantCode(h.t, "commit partition 0", partitions[0].ErrorCode, nil)
	wantCode(h.t, "commit partition 1", partitions[1].ErrorCode, nil)
	wantCode(h.t, "commit partition 7", partitions[2].ErrorCode, kerr.UnknownTopicOrPartition)
	// A negative offset fails alone (Kafka would store it; see
	// 08_offset_commit.go).
	wantCode(h.t, "commit a negative offset", partitions[3].ErrorCode, kerr.InvalidCommitOffsetSize)
	if o, ok := h.broker.meta.State().CommittedOffset(h.name, topic.Name, 2); ok {
		h.t.Fatalf("a negative offset committed as %+v", o)
	}
	o, ok := h.broker.meta.State().CommittedOffset(h.name, topic.Name, 1)
	wantEpoch := int32(-1)
	if version >= 6 {
		wantEpoch = 3
	}
	if !ok || o.Offset != 42 || o.Metadata != "m" || o.LeaderEpoch != wantEpoch {
		h.t.Fatalf("committed %+v (present %v)", o, ok)
	}
	if version == 0 {
		return
	}
	// A member of a stable group must commit with its generation.
	member, generation := joinStable(h, topic.Name)
	wantCode(h.t, "commit outside the generation", h.client.request(req, version).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.UnknownMemberID)
	req.MemberID, req.Generation = member, generation+1
	wantCode(h.t, "commit with another generation", h.client.request(req, version).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.IllegalGeneration)
	req.Generation = generation
	wantCode(h.t, "member commit", h.client.request(req, version).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)
}

func checkOffsetFetch(h *handlerTest, version int16) {
	topic := h.topic(2, nil)
	commitSimple(h, topic.Name, 1, 17)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = h.name
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic.Name, []int32{0, 1}
	req.Topics = append(req.Topics, rt)
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = h.name
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.Topic, gt.Partitions = topic.Name, []int32{0, 1}
	rg.Topics = append(rg.Topics, gt)
	other := kmsg.NewOffsetFetchRequestGroup()
	other.Group = h.name + "-none"
	req.Groups = append(req.Groups, rg, other)
	resp := h.client.request(req, version).(*kmsg.OffsetFetchResponse)
	var got []int64
	if version < 8 {
		for _, p := range resp.Topics[0].Partitions {
			got = append(got, p.Offset)
		}
	} else {
		if len(resp.Groups) != 2 || resp.Groups[0].Group != h.name || len(resp.Groups[1].Topics) != 0 {
			h.t.Fatalf("groups answered %+v", resp.Groups)
		}
		for _, p := range resp.Groups[0].Topics[0].Partitions {
			got = append(got, p.Offset)
		}
	}
	if len(got) != 2 || got[0] != 17 || got[1] != -1 {
		h.t.Fatalf("fetched offsets %v, want [17 -1]", got)
	}
}

func checkDeleteGroups(h *handlerTest, version int16) {
	topic := h.topic(1, nil)
	commitSimple(h, topic.Name, 1, 5)
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{h.name}
	wantCode(h.t, "delete", h.client.request(req, version).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, nil)
	if _, ok := h.broker.meta.State().CommittedOffset(h.name, topic.Name, 0); ok {
		h.t.Fatal("offsets kept after DeleteGroups")
	}
	wantCode(h.t, "delete again", h.client.request(req, version).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.GroupIDNotFound)
	joinStable(h, topic.Name)
	wantCode(h.t, "delete with members", h.client.request(req, version).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.NonEmptyGroup)
}

// offsetDeleteRuns numbers the runs of checkOffsetDelete: v0 is both the
// lowest and the highest version, so the case runs twice on one broker and
// each run needs its own topic and group.
var offsetDeleteRuns atomic.Int32

func checkOffsetDelete(h *handlerTest, version int16) {
	h = &handlerTest{t: h.t, broker: h.broker, client: h.client, name: fmt.Sprintf("%s-%d", h.name, offsetDeleteRuns.Add(1))}
	topic := h.topic(2, nil)
	commitSimple(h, topic.Name, 2, 9)
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = h.name
	rt := kmsg.NewOffsetDeleteRequestTopic()
	rt.Topic = topic.Name
	rp := kmsg.NewOffsetDeleteRequestTopicPartition()
	rp.Partition = 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := h.client.request(req, version).(*kmsg.OffsetDeleteResponse)
	wantCode(h.t, "offset delete", resp.ErrorCode, nil)
	wantCode(h.t, "offset delete partition", resp.Topics[0].Partitions[0].ErrorCode, nil)
	st := h.broker.meta.State()
	if _, ok := st.CommittedOffset(h.name, topic.Name, 1); ok {
		h.t.Fatal("partition 1's offset kept")
	}
	if _, ok := st.CommittedOffset(h.name, topic.Name, 0); !ok {
		h.t.Fatal("partition 0's offset deleted")
	}
	joinStable(h, topic.Name)
	resp = h.client.request(req, version).(*kmsg.OffsetDeleteResponse)
	wantCode(h.t, "offset delete while subscribed", resp.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)
	req.Group = h.name + "-none"
	wantCode(h.t, "unknown group", h.client.request(req, version).(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.GroupIDNotFound)
}

// TestOffsetFetchNotCoordinator: OffsetFetch for a group another broker
// coordinates is NOT_COORDINATOR at every version: v0-1 have no top-level
// error code, so every partition asked carries it (with offset -1, as
// Kafka answers), rather than an answer of "nothing committed" a client
// would act on.
func TestOffsetFetchNotCoordinator(t *testing.T) {
	t.Parallel()
	b := newTestBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	other := b.config.BrokerID + 1
	listener := meta.Listener{Name: defaultListenerName, Host: "127.0.0.1", Port: 9093, SecurityProtocol: "PLAINTEXT"}
	if _, err := b.meta.Propose(ctx, &meta.RegisterBroker{ID: other, Listeners: []meta.Listener{listener}}); err != nil {
		t.Fatal(err)
	}
	var groupID string
	for i := 0; groupID == ""; i++ {
		if id := fmt.Sprintf("elsewhere-%d", i); group.ChooseCoordinator(id, []int32{b.config.BrokerID, other}) == other {
			groupID = id
		}
	}
	client := connect(t, b)
	for version := int16(0); version <= 9; version++ {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = groupID
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0, 3}
		req.Topics = append(req.Topics, rt)
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = groupID
		req.Groups = append(req.Groups, rg)
		resp := client.request(req, version).(*kmsg.OffsetFetchResponse)
		what := fmt.Sprintf("OffsetFetch v%d", version)
		switch {
		case version < 2:
			if len(resp.Topics) != 1 || resp.Topics[0].Topic != "t" || len(resp.Topics[0].Partitions) != 2 {
				t.Fatalf("%s answered %+v, want both partitions asked", what, resp.Topics)
			}
			for i, p := range resp.Topics[0].Partitions {
				wantCode(t, what, p.ErrorCode, kerr.NotCoordinator)
				if p.Partition != rt.Partitions[i] || p.Offset != -1 {
					t.Fatalf("%s partition answered %+v", what, p)
				}
			}
		case version < 8:
			wantCode(t, what, resp.ErrorCode, kerr.NotCoordinator)
		default:
			if len(resp.Groups) != 1 {
				t.Fatalf("%s answered %+v", what, resp.Groups)
			}
			wantCode(t, what, resp.Groups[0].ErrorCode, kerr.NotCoordinator)
		}
	}
}

// heartbeatGate is the broker's metadata with its own heartbeats to the
// metadata leader failing while failing is set, as when it is cut off.
type heartbeatGate struct {
	Metadata
	failing atomic.Bool
	failed  atomic.Int64 // heartbeats failed
}

func (g *heartbeatGate) Heartbeat(ctx context.Context, brokerID int32, epoch int64) error {
	if g.failing.Load() {
		g.failed.Add(1)
		return fmt.Errorf("cut off from the metadata group (test)")
	}
	return g.Metadata.Heartbeat(ctx, brokerID, epoch)
}

// TestALapsedLeaseCoordinatesNoGroup: a broker whose heartbeats to the
// metadata leader stop being acknowledged for broker.session.timeout.ms
// is fenced by the controller, and its groups move; from then it answers
// its members NOT_COORDINATOR, so they look again and find the broker the
// group moved to, rather than go on heartbeating, holding their
// partitions, beside a new group formed elsewhere. An acknowledged
// heartbeat gives the group back.
func TestALapsedLeaseCoordinatesNoGroup(t *testing.T) {
	t.Parallel()
	gate := &heartbeatGate{}
	b := newTestBrokerWith(t, nil, func(m Metadata) Metadata { gate.Metadata = m; return gate })
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "lapsed"}
	member, generation := joinStable(h, "t")
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.Generation, req.MemberID = h.name, generation, member
	heartbeat := func() int16 { return h.client.request(req, 4).(*kmsg.HeartbeatResponse).ErrorCode }
	wantCode(t, "heartbeat with the lease", heartbeat(), nil)

	gate.failing.Store(true)
	// The membership loop heartbeats one at a time: once one has failed,
	// none that passed the gate before can still renew the lease.
	for deadline := time.Now().Add(30 * time.Second); gate.failed.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the broker sent no heartbeat in 30 s")
		}
	}
	lapsed := time.Now().Add(-b.config.SessionTimeout)
	b.leaseStart.Store(&lapsed)
	wantCode(t, "heartbeat once the lease lapsed", heartbeat(), kerr.NotCoordinator)

	gate.failing.Store(false)
	for deadline := time.Now().Add(30 * time.Second); heartbeat() != 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the group's heartbeat still fails 30 s after the broker's heartbeats were acknowledged again")
		}
	}
}
