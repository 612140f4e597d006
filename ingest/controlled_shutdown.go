package ingest

import (
	"context"
	"time"

	"github.com/stratalog/strata/meta"
)

// Controlled shutdown. A broker that is asked to stop moves the leadership
// of its partitions to other ISR members before it stops serving, as
// Kafka's controlled shutdown does, so a rolling restart costs producers a
// leader move (they refresh metadata on NOT_LEADER_OR_FOLLOWER) rather
// than a session timeout. It fences its own incarnation through the
// metadata group: the state machine elects a new leader from the rest of
// each ISR it led and takes it out of every ISR, exactly as if the
// controller had fenced it, and the next start registers a new
// incarnation, which rejoins the ISRs once caught up. A broker that leads
// no partition fences itself too: the consumer groups it coordinates move
// to the live brokers at once (group.ChooseCoordinator), where else
// FindCoordinator would name it until its session timed out and the
// commits of consumers giving up partitions meanwhile would fail. A
// broker alone in the cluster has nowhere to move anything to and skips
// it.

// controlledShutdownWait bounds how long shutdown waits for the metadata
// group to take the fence and for this broker to apply it.
const controlledShutdownWait = 5 * time.Second

// moveLeadershipAway fences this broker's incarnation, when other brokers
// are live, and waits until its partitions follow the result.
func (b *Broker) moveLeadershipAway(ctx context.Context) {
	b.leaving.Store(true)
	st := b.meta.State()
	others := 0
	for _, broker := range liveBrokers(st) {
		if broker.ID != b.config.BrokerID {
			others++
		}
	}
	if others == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, controlledShutdownWait)
	defer cancel()
	start := time.Now()
	result, err := b.meta.Propose(ctx, &meta.FenceBroker{ID: b.config.BrokerID, Epoch: b.incarnation.Load()})
	if err != nil {
		b.log.Warn("controlled shutdown: could not move leadership away; followers take over once the session times out", "error", err)
		return
	}
	b.partitions.WaitReconciled(ctx, result.Index)
	b.log.Info("controlled shutdown: leadership moved to other replicas", "took", time.Since(start).Round(time.Millisecond),
		"still_leading", b.partitions.Led())
}
