package ingest

import (
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/quota"
)

// Client quotas are enforced as Kafka enforces them since KIP-219: a
// request is handled and answered at once, with throttle_time_ms saying
// how long the client is over its quota, and the broker reads nothing more
// from the connection for that long (the client, told, waits as well).
// Usage is metered per broker: produce by request bytes
// (producer_byte_rate), fetch by response bytes (consumer_byte_rate; a
// fetch that arrives while its client is over gets an empty answer, as in
// Kafka), every request by the time its handler took (request_percentage,
// of one handler's time). Long polls do not count their waiting, and the
// brokers' own replication requests are exempt.
//
// A user quota applies to the principal's name (alice for User:alice, the
// subject DN for a client certificate), as in Kafka; an unauthenticated
// client is the user ANONYMOUS.

// quotaUser is the user quotas meter req under: its principal's name.
func (r *request) quotaUser() string {
	p, _ := r.principal()
	_, name, _ := strings.Cut(p, ":")
	return name
}

// quotaIdle is how long a meter no request used is kept.
const quotaIdle = 10 * time.Minute

// clientQuotas holds the meters of the quotas clients of this broker use.
type clientQuotas struct {
	mu        sync.Mutex
	meters    map[quotaMeterKey]*quotaMeter
	lastPrune time.Time
}

type quotaMeterKey struct {
	key                string
	user, clientID     string
	perUser, perClient bool
}

type quotaMeter struct {
	bucket *quota.Bucket
	used   time.Time
}

// meter returns the budget the quota of key applies to a client's usage
// against, or nil when no quota applies.
func (q *clientQuotas) meter(st *meta.State, key, user, clientID string, now time.Time) *quota.Bucket {
	resolved, ok := st.ClientQuota(user, clientID, key)
	if !ok {
		return nil
	}
	k := quotaMeterKey{key: key, perUser: resolved.Meter.User != nil, perClient: resolved.Meter.ClientID != nil}
	if k.perUser {
		k.user = user
	}
	if k.perClient {
		k.clientID = clientID
	}
	rate := resolved.Value
	if key == meta.RequestPercentage {
		rate /= 100 // seconds of handling per second
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.meters == nil {
		q.meters = map[quotaMeterKey]*quotaMeter{}
	}
	if now.Sub(q.lastPrune) > quotaIdle {
		for mk, m := range q.meters {
			if now.Sub(m.used) > quotaIdle {
				delete(q.meters, mk)
			}
		}
		q.lastPrune = now
	}
	m := q.meters[k]
	if m == nil {
		m = &quotaMeter{bucket: quota.NewBucket()}
		q.meters[k] = m
	}
	m.used = now
	m.bucket.SetRate(rate)
	return m.bucket
}

// charge counts amount against the client's quota of key and returns how
// long the client is now over it (zero when within it, or when no quota
// applies).
func (q *clientQuotas) charge(st *meta.State, key, user, clientID string, amount float64) time.Duration {
	now := time.Now()
	b := q.meter(st, key, user, clientID, now)
	if b == nil {
		return 0
	}
	b.Record(amount, now)
	return b.Debt(now)
}

// owed returns how long the client is over its quota of key already.
func (q *clientQuotas) owed(st *meta.State, key, user, clientID string) time.Duration {
	now := time.Now()
	if b := q.meter(st, key, user, clientID, now); b != nil {
		return b.Debt(now)
	}
	return 0
}

// quotaExempt reports whether a request is not metered: ApiVersions, and
// a replica's own requests (a follower's fetch, and the offsets it asks
// before one), which Kafka does not count against client quotas either,
// when its principal holds ClusterAction on the cluster, as a follower's
// does. Any client can set a replica id; one that may not act as a
// follower is refused and metered like any other client.
func (b *Broker) quotaExempt(r *request) bool {
	var replicaID int32
	switch body := r.body.(type) {
	case *kmsg.ApiVersionsRequest:
		return true
	case *kmsg.FetchRequest:
		replicaID = fetchReplicaID(body)
	case *kmsg.ListOffsetsRequest:
		replicaID = body.ReplicaID
	case *kmsg.OffsetForLeaderEpochRequest:
		replicaID = body.ReplicaID
	default:
		return false
	}
	return replicaID >= 0 && b.authorizeCluster(r, acl.OpClusterAction)
}

// throttleMillis is a throttle time as the protocol's field holds it.
func throttleMillis(d time.Duration) int32 {
	return int32(min(d.Milliseconds(), 1<<31-1))
}
