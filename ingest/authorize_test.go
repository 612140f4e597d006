package ingest

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

// authorizationCase is one API as a principal without ACLs sends it: the
// request, the version, and the error code(s) the answer carries.
type authorizationCase struct {
	version int16 // 0: the highest the broker answers
	request func() kmsg.Request
	codes   func(kmsg.Response) []int16
	// refused is the error a principal without ACLs gets; nil for an
	// API Kafka answers without an ACL check.
	refused *kerr.Error
}

// The topic and group every case names.
const (
	authzTopic = "t"
	authzGroup = "g"
)

func topicReq[T any](add func(*T)) func() kmsg.Request {
	return func() kmsg.Request {
		var r T
		if d, ok := any(&r).(interface{ Default() }); ok {
			d.Default()
		}
		add(&r)
		return any(&r).(kmsg.Request)
	}
}

var authorizationCases = map[int16]authorizationCase{
	0: {version: 12, refused: kerr.TopicAuthorizationFailed, request: topicReq(func(r *kmsg.ProduceRequest) {
		r.Acks, r.TimeoutMillis = 1, 1000
		t := kmsg.NewProduceRequestTopic()
		t.Topic = authzTopic
		p := kmsg.NewProduceRequestTopicPartition()
		p.Records = []byte{0}
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
	}), codes: func(r kmsg.Response) []int16 {
		return []int16{r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode}
	}},
	1: {version: 12, refused: kerr.TopicAuthorizationFailed, request: topicReq(func(r *kmsg.FetchRequest) {
		r.ReplicaID, r.MaxBytes = -1, 1<<20
		t := kmsg.NewFetchRequestTopic()
		t.Topic = authzTopic
		t.Partitions = append(t.Partitions, kmsg.NewFetchRequestTopicPartition())
		r.Topics = append(r.Topics, t)
	}), codes: func(r kmsg.Response) []int16 {
		return []int16{r.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode}
	}},
	2: {refused: kerr.TopicAuthorizationFailed, request: topicReq(func(r *kmsg.ListOffsetsRequest) {
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = authzTopic
		t.Partitions = append(t.Partitions, kmsg.NewListOffsetsRequestTopicPartition())
		r.Topics = append(r.Topics, t)
	}), codes: func(r kmsg.Response) []int16 {
		return []int16{r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode}
	}},
	3: {refused: kerr.TopicAuthorizationFailed, request: topicReq(func(r *kmsg.MetadataRequest) {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(authzTopic)
		r.Topics = append(r.Topics, t)
	}), codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.MetadataResponse).Topics[0].ErrorCode} }},
	8: {refused: kerr.GroupAuthorizationFailed, request: topicReq(func(r *kmsg.OffsetCommitRequest) {
		r.Group, r.Generation = authzGroup, -1
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = authzTopic
		t.Partitions = append(t.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
		r.Topics = append(r.Topics, t)
	}), codes: func(r kmsg.Response) []int16 {
		return []int16{r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode}
	}},
	9: {refused: kerr.GroupAuthorizationFailed, request: topicReq(func(r *kmsg.OffsetFetchRequest) {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = authzGroup
		r.Groups = append(r.Groups, g)
	}), codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode} }},
	10: {refused: kerr.GroupAuthorizationFailed, request: topicReq(func(r *kmsg.FindCoordinatorRequest) {
		r.CoordinatorKeys = []string{authzGroup}
	}), codes: func(r kmsg.Response) []int16 {
		return []int16{r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode}
	}},
	11: {refused: kerr.GroupAuthorizationFailed, request: topicReq(func(r *kmsg.JoinGroupRequest) {
		r.Group, r.ProtocolType, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = authzGroup, "consumer", 10000, 10000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		r.Protocols = append(r.Protocols, p)
	}), codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.JoinGroupResponse).ErrorCode} }},
	12: {refused: kerr.GroupAuthorizationFailed, request: topicReq(func(r *kmsg.HeartbeatRequest) { r.Group, r.MemberID = authzGroup, "m" }),
		codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.HeartbeatResponse).ErrorCode} }},
	13: {version: 2, refused: kerr.GroupAuthorizationFailed, request: topicReq(func(r *kmsg.LeaveGroupRequest) { r.Group, r.MemberID = authzGroup, "m" }),
		codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.LeaveGroupResponse).ErrorCode} }},
	14: {refused: kerr.GroupAuthorizationFailed, request: topicReq(func(r *kmsg.SyncGroupRequest) { r.Group, r.MemberID = authzGroup, "m" }),
		codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.SyncGroupResponse).ErrorCode} }},
	15: {refused: kerr.GroupAuthorizationFailed, request: topicReq(func(r *kmsg.DescribeGroupsRequest) { r.Groups = []string{authzGroup} }),
		codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode} }},
	// ListGroups is not refused: it lists only the groups the principal
	// may describe (TestListGroupsHidesGroups).
	16: {request: topicReq(func(*kmsg.ListGroupsRequest) {}),
		codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.ListGroupsResponse).ErrorCode} }},
	17: {request: topicReq(func(r *kmsg.SASLHandshakeRequest) { r.Mechanism = "PLAIN" }),
		codes: func(kmsg.Response) []int16 { return nil }},
	18: {request: topicReq(func(*kmsg.ApiVersionsRequest) {}),
		codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.ApiVersionsResponse).ErrorCode} }},
	19: {refused: kerr.TopicAuthorizationFailed, request: topicReq(func(r *kmsg.CreateTopicsRequest) {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = "new-topic", 1, 1
		r.Topics = append(r.Topics, t)
		r.TimeoutMillis = 1000
	}), codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode} }},
	20: {refused: kerr.TopicAuthorizationFailed, request: topicReq(func(r *kmsg.DeleteTopicsRequest) {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(authzTopic)
		r.Topics, r.TopicNames, r.TimeoutMillis = append(r.Topics, t), []string{authzTopic}, 1000
	}), codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode} }},
	21: {refused: kerr.TopicAuthorizationFailed, request: topicReq(func(r *kmsg.DeleteRecordsRequest) {
		t := kmsg.NewDeleteRecordsRequestTopic()
		t.Topic = authzTopic
		t.Partitions = append(t.Partitions, kmsg.NewDeleteRecordsRequestTopicPartition())
		r.Topics, r.TimeoutMillis = append(r.Topics, t), 1000
	}), codes: func(r kmsg.Response) []int16 {
		return []int16{r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode}
	}},
	22: {refused: kerr.ClusterAuthorizationFailed, request: topicReq(func(r *kmsg.InitProducerIDRequest) {}),
		codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.InitProducerIDResponse).ErrorCode} }},
	23: {refused: kerr.TopicAuthorizationFailed, request: topicReq(func(r *kmsg.OffsetForLeaderEpochRequest) {
		r.ReplicaID = -1
		t := kmsg.NewOffsetForLeaderEpochRequestTopic()
		t.Topic = authzTopic
		t.Partitions = append(t.Partitions, kmsg.NewOffsetForLeaderEpochRequestTopicPartition())
		r.Topics = append(r.Topics, t)
	}), codes: func(r kmsg.Response) []int16 {
		return []int16{r.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode}
	}},
	29: {refused: kerr.ClusterAuthorizationFailed, request: topicReq(func(r *kmsg.DescribeACLsRequest) {
		r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	}), codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.DescribeACLsResponse).ErrorCode} }},
	30: {refused: kerr.ClusterAuthorizationFailed, request: topicReq(func(r *kmsg.CreateACLsRequest) {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, authzTopic, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:ANONYMOUS", "*", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
		r.Creations = append(r.Creations, c)
	}), codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.CreateACLsResponse).Results[0].ErrorCode} }},
	31: {refused: kerr.ClusterAuthorizationFailed, request: topicReq(func(r *kmsg.DeleteACLsRequest) {
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		r.Filters = append(r.Filters, f)
	}), codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.DeleteACLsResponse).Results[0].ErrorCode} }},
	32: {refused: kerr.TopicAuthorizationFailed, request: topicReq(func(r *kmsg.DescribeConfigsRequest) {
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, authzTopic
		broker := res
		broker.ResourceType, broker.ResourceName = kmsg.ConfigResourceTypeBroker, ""
		r.Resources = append(r.Resources, res, broker)
	}), codes: func(r kmsg.Response) []int16 {
		res := r.(*kmsg.DescribeConfigsResponse).Resources
		if res[1].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			return []int16{res[1].ErrorCode} // the broker resource needs the cluster
		}
		return []int16{res[0].ErrorCode}
	}},
	33: {refused: kerr.TopicAuthorizationFailed, request: topicReq(func(r *kmsg.AlterConfigsRequest) {
		res := kmsg.NewAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, authzTopic
		r.Resources = append(r.Resources, res)
	}), codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode} }},
	35: {refused: kerr.ClusterAuthorizationFailed, request: topicReq(func(*kmsg.DescribeLogDirsRequest) {}),
		codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.DescribeLogDirsResponse).ErrorCode} }},
	36: {request: topicReq(func(*kmsg.SASLAuthenticateRequest) {}),
		codes: func(kmsg.Response) []int16 { return nil }},
	37: {refused: kerr.TopicAuthorizationFailed, request: topicReq(func(r *kmsg.CreatePartitionsRequest) {
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = authzTopic, 2
		r.Topics, r.TimeoutMillis = append(r.Topics, t), 1000
	}), codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode} }},
	42: {refused: kerr.GroupAuthorizationFailed, request: topicReq(func(r *kmsg.DeleteGroupsRequest) { r.Groups = []string{authzGroup} }),
		codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode} }},
	43: {refused: kerr.ClusterAuthorizationFailed, request: topicReq(func(r *kmsg.ElectLeadersRequest) { r.TimeoutMillis = 1000 }),
		codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.ElectLeadersResponse).ErrorCode} }},
	44: {refused: kerr.TopicAuthorizationFailed, request: topicReq(func(r *kmsg.IncrementalAlterConfigsRequest) {
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, authzTopic
		r.Resources = append(r.Resources, res)
	}), codes: func(r kmsg.Response) []int16 {
		return []int16{r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode}
	}},
	45: {refused: kerr.ClusterAuthorizationFailed, request: topicReq(func(r *kmsg.AlterPartitionAssignmentsRequest) { r.TimeoutMillis = 1000 }),
		codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode} }},
	46: {refused: kerr.ClusterAuthorizationFailed, request: topicReq(func(r *kmsg.ListPartitionReassignmentsRequest) { r.TimeoutMillis = 1000 }),
		codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode} }},
	47: {refused: kerr.GroupAuthorizationFailed, request: topicReq(func(r *kmsg.OffsetDeleteRequest) {
		r.Group = authzGroup
		t := kmsg.NewOffsetDeleteRequestTopic()
		t.Topic = authzTopic
		t.Partitions = append(t.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
		r.Topics = append(r.Topics, t)
	}), codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.OffsetDeleteResponse).ErrorCode} }},
	48: {refused: kerr.ClusterAuthorizationFailed, request: topicReq(func(*kmsg.DescribeClientQuotasRequest) {}),
		codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.DescribeClientQuotasResponse).ErrorCode} }},
	49: {refused: kerr.ClusterAuthorizationFailed, request: topicReq(func(r *kmsg.AlterClientQuotasRequest) {
		e := kmsg.NewAlterClientQuotasRequestEntry()
		entity := kmsg.NewAlterClientQuotasRequestEntryEntity()
		entity.Type, entity.Name = "client-id", kmsg.StringPtr("c")
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = meta.ProducerByteRate, 1024
		e.Entity, e.Ops = append(e.Entity, entity), append(e.Ops, op)
		r.Entries = append(r.Entries, e)
	}), codes: func(r kmsg.Response) []int16 {
		return []int16{r.(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode}
	}},
	50: {refused: kerr.ClusterAuthorizationFailed, request: topicReq(func(*kmsg.DescribeUserSCRAMCredentialsRequest) {}),
		codes: func(r kmsg.Response) []int16 {
			return []int16{r.(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode}
		}},
	51: {refused: kerr.ClusterAuthorizationFailed, request: topicReq(func(r *kmsg.AlterUserSCRAMCredentialsRequest) {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = "alice", 1
		r.Deletions = append(r.Deletions, d)
	}), codes: func(r kmsg.Response) []int16 {
		return []int16{r.(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode}
	}},
	60: {request: topicReq(func(*kmsg.DescribeClusterRequest) {}),
		codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.DescribeClusterResponse).ErrorCode} }},
	64: {refused: kerr.ClusterAuthorizationFailed, request: topicReq(func(r *kmsg.UnregisterBrokerRequest) { r.BrokerID = 7 }),
		codes: func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.UnregisterBrokerResponse).ErrorCode} }},
}

// newAuthzBroker is a broker with topic t whose authorizer refuses
// resources without ACLs; superUser makes the anonymous principal a super
// user.
func newAuthzBroker(t *testing.T, superUser bool) *Broker {
	b := newTestBroker(t, func(c *Config) {
		c.Security.AllowEveryoneIfNoACL = false
		if superUser {
			c.Security.SuperUsers = []string{anonymous}
		}
	})
	if _, err := b.meta.Propose(context.Background(), &meta.CreateTopic{ID: uuid.New(), Name: authzTopic, Replicas: [][]int32{{b.config.BrokerID}}}); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEveryAPIIsAuthorized walks every API the broker answers: a
// principal without ACLs is refused with the API's authorization error,
// and the same request from a super user is not.
func TestEveryAPIIsAuthorized(t *testing.T) {
	denied, super := newAuthzBroker(t, false), newAuthzBroker(t, true)
	for _, a := range supportedAPIs() {
		c, ok := authorizationCases[a.key]
		if !ok {
			t.Errorf("%s (key %d) is answered but has no authorization case: say which ACL it needs", a.name, a.key)
			continue
		}
		version := c.version
		if version == 0 {
			version = a.maxVersion
		}
		t.Run(a.name, func(t *testing.T) {
			refused := connect(t, denied).request(c.request(), version)
			allowed := connect(t, super).request(c.request(), version)
			for _, code := range c.codes(refused) {
				if c.refused == nil && isAuthorizationError(code) {
					t.Errorf("without ACLs: %v, want no authorization check", kerr.ErrorForCode(code))
				}
				if c.refused != nil && code != c.refused.Code {
					t.Errorf("without ACLs: %v, want %v", kerr.ErrorForCode(code), c.refused)
				}
			}
			for _, code := range c.codes(allowed) {
				if isAuthorizationError(code) {
					t.Errorf("as a super user: %v", kerr.ErrorForCode(code))
				}
			}
		})
	}
}

func isAuthorizationError(code int16) bool {
	switch code {
	case kerr.TopicAuthorizationFailed.Code, kerr.GroupAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code,
		kerr.TransactionalIDAuthorizationFailed.Code:
		return true
	}
	return false
}

// ListGroups lists every group to a principal with Describe on the
// cluster, and otherwise only those it may describe.
func TestListGroupsHidesGroups(t *testing.T) {
	b := newAuthzBroker(t, false)
	ctx := context.Background()
	for _, g := range []string{"visible", "hidden"} {
		if _, err := b.meta.Propose(ctx, &meta.CommitOffsets{Group: g, CommitTimeMs: 1, Offsets: []meta.OffsetCommit{{Topic: authzTopic, Offset: 1, LeaderEpoch: -1}}}); err != nil {
			t.Fatal(err)
		}
	}
	allow := func(t acl.ResourceType, name string, op acl.Operation) acl.Binding {
		return acl.Binding{ResourceType: t, ResourceName: name, PatternType: acl.PatternLiteral, Principal: anonymous, Host: "*", Operation: op, Permission: acl.Allow}
	}
	list := func() []string {
		var out []string
		for _, g := range connect(t, b).request(kmsg.NewPtrListGroupsRequest(), 4).(*kmsg.ListGroupsResponse).Groups {
			out = append(out, g.Group)
		}
		slices.Sort(out)
		return out
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("without ACLs ListGroups shows %v", got)
	}
	if _, err := b.meta.Propose(ctx, &meta.CreateACLs{Bindings: []acl.Binding{allow(acl.Group, "visible", acl.OpRead)}}); err != nil {
		t.Fatal(err)
	}
	if got := list(); !slices.Equal(got, []string{"visible"}) {
		t.Fatalf("with Read on group visible, ListGroups shows %v", got)
	}
	if _, err := b.meta.Propose(ctx, &meta.CreateACLs{Bindings: []acl.Binding{allow(acl.Cluster, acl.ClusterName, acl.OpDescribe)}}); err != nil {
		t.Fatal(err)
	}
	if got := list(); !slices.Equal(got, []string{"hidden", "visible"}) {
		t.Fatalf("with Describe on the cluster, ListGroups shows %v", got)
	}
}

// TestAReplicaIDWithoutClusterActionIsMetered: a follower's requests are
// not counted against client quotas, but any client can set a replica id;
// one whose principal lacks ClusterAction is refused and, like any other
// client, throttled by request_percentage. A super user's are exempt.
func TestAReplicaIDWithoutClusterActionIsMetered(t *testing.T) {
	// The authorization cases' requests, from a replica id.
	requests := map[string]func() kmsg.Request{}
	for name, key := range map[string]int16{"Fetch": 1, "ListOffsets": 2, "OffsetForLeaderEpoch": 23} {
		requests[name] = func() kmsg.Request {
			req := authorizationCases[key].request()
			switch r := req.(type) {
			case *kmsg.FetchRequest:
				r.ReplicaID = 3
			case *kmsg.ListOffsetsRequest:
				r.ReplicaID = 3
			case *kmsg.OffsetForLeaderEpochRequest:
				r.ReplicaID = 3
			}
			return req
		}
	}
	throttled := func(b *Broker, req kmsg.Request) int32 {
		t.Helper()
		ms, _ := connect(t, b).request(req, 4).(kmsg.ThrottleResponse).Throttle()
		return ms
	}
	denied, super := newAuthzBroker(t, false), newAuthzBroker(t, true)
	for _, b := range []*Broker{denied, super} {
		// A quota no request fits in: any handler time is over it.
		if _, err := b.meta.Propose(t.Context(), &meta.AlterClientQuota{
			Entity: meta.QuotaEntity{ClientID: &meta.QuotaName{Default: true}},
			Set:    map[string]float64{meta.RequestPercentage: 1e-9},
		}); err != nil {
			t.Fatal(err)
		}
	}
	for name, req := range requests {
		if ms := throttled(denied, req()); ms == 0 {
			t.Errorf("%s with a replica id, without ClusterAction: not throttled, want metered as a client's", name)
		}
		if ms := throttled(super, req()); ms != 0 {
			t.Errorf("%s with a replica id from a super user: throttled %d ms, want exempt as a follower's", name, ms)
		}
	}
}

// TestUnauthorizedAnswersDoNotTellWhichTopicsExist: a principal without
// ACLs producing to, or fetching from, a topic by name is told
// TOPIC_AUTHORIZATION_FAILED whether the topic exists or not, as Kafka
// authorizes before it looks the topic up; it used to be told
// UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist, so it could
// list the cluster's topics by asking. A super user is told the truth.
func TestUnauthorizedAnswersDoNotTellWhichTopicsExist(t *testing.T) {
	denied, super := newAuthzBroker(t, false), newAuthzBroker(t, true)
	// The authorization cases' Produce and Fetch, naming topic.
	naming := func(key int16) func(topic string) kmsg.Request {
		return func(topic string) kmsg.Request {
			req := authorizationCases[key].request()
			switch r := req.(type) {
			case *kmsg.ProduceRequest:
				r.Topics[0].Topic = topic
			case *kmsg.FetchRequest:
				r.Topics[0].Topic = topic
			}
			return req
		}
	}
	produce, fetch := naming(0), naming(1)
	code := func(b *Broker, req kmsg.Request) int16 {
		resp := connect(t, b).request(req, 9)
		return authorizationCases[req.Key()].codes(resp)[0]
	}
	for name, req := range map[string]func(string) kmsg.Request{"Produce": produce, "Fetch": fetch} {
		for _, topic := range []string{authzTopic, "does-not-exist"} {
			if got := code(denied, req(topic)); got != kerr.TopicAuthorizationFailed.Code {
				t.Errorf("%s of %q without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", name, topic, kerr.ErrorForCode(got))
			}
		}
		if got := code(super, req("does-not-exist")); got != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("%s of a topic that does not exist by a super user: %v, want UNKNOWN_TOPIC_OR_PARTITION", name, kerr.ErrorForCode(got))
		}
	}
}
