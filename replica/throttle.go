package replica

import (
	"math"

	"github.com/stratalog/strata/quota"
)

// Replication throttles, Kafka's (KIP-73): a broker's leaders send at most
// leader.replication.throttled.rate bytes per second, and its followers
// fetch at most follower.replication.throttled.rate, for the replicas the
// topics' leader. and follower.replication.throttled.replicas name, and
// only while the follower is out of the ISR: catch-up and reassignment
// copies slow down, replication of in-sync followers never does. As in
// Kafka, the check comes before the transfer and the bytes are counted
// after it (each direction is a quota.Bucket), so a transfer may overshoot
// by one fetch; the rate over time holds.

// throttleRate is a rate config's value as a bucket's rate.
func throttleRate(rate int64) float64 {
	if rate == math.MaxInt64 {
		return quota.Unlimited
	}
	return float64(rate)
}

// followerThrottled reports whether this follower's fetches of p count
// against its follower throttle: follower.replication.throttled.replicas
// names its replica and it is out of the ISR.
func (p *Partition) followerThrottled() bool {
	return p.settings.Load().followerThrottled && !p.role.Load().isrMember(p.manager.config.BrokerID)
}
