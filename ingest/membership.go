package ingest

import (
	"context"
	"errors"
	"time"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/replica"
)

// brokerHeartbeatInterval is how often the broker tells the metadata leader
// it is alive (broker.heartbeat.interval.ms). It must stay well under the
// metadata group's broker.session.timeout.ms (9 s by default).
const brokerHeartbeatInterval = 2 * time.Second

// register makes this broker a member of the cluster: it proposes its
// registration (id, rack, Kafka listener) and starts handing out producer
// ids of the incarnation epoch it gets back.
func (b *Broker) register(ctx context.Context) error {
	var listeners []meta.Listener
	for _, l := range b.config.Listeners {
		listener, err := listenerFor(l, l.advertised())
		if err != nil {
			return err
		}
		listeners = append(listeners, listener)
	}
	if a := b.config.InterBrokerAddress; a != "" {
		interBroker, err := listenerFor(b.config.interBrokerListener(), a)
		if err != nil {
			return err
		}
		interBroker.Name = replica.InterBrokerListener
		listeners = append(listeners, interBroker)
	}
	sent := time.Now()
	result, err := b.meta.Propose(ctx, &meta.RegisterBroker{ID: b.config.BrokerID, Rack: b.config.Rack, Listeners: listeners})
	if err != nil {
		return err
	}
	b.incarnation.Store(result.Epoch)
	// A broker registering again may have been fenced and deposed: its
	// lease resumes only once its partitions follow the metadata that
	// says so, so it never leads on a stale view. (The first registration
	// comes before the partitions open, from a state that includes it.)
	if b.started.Load() {
		b.partitions.WaitReconciled(ctx, result.Index)
	}
	b.renewLease(sent)
	b.producerIDs.reset(result.Epoch)
	b.log.Info("registered with the metadata group", "broker", b.config.BrokerID, "epoch", result.Epoch, "listeners", listeners)
	return nil
}

// runMembership keeps the broker registered until ctx ends: it heartbeats to
// the metadata leader every brokerHeartbeatInterval and registers again
// when the leader has fenced this incarnation or when the incarnation's
// producer ids run out. It is the broker's membership goroutine, started by
// Start and stopped by cancelling ctx.
func (b *Broker) runMembership(ctx context.Context) {
	ticker := time.NewTicker(brokerHeartbeatInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-b.reregister:
			b.registerAgain(ctx, "producer ids used up")
			continue
		}
		sent := time.Now()
		err := b.meta.Heartbeat(ctx, b.config.BrokerID, b.incarnation.Load())
		switch {
		case err == nil:
			b.renewLease(sent)
		case b.leaving.Load():
			// Controlled shutdown fenced this broker; it stays fenced.
		case errors.Is(err, meta.ErrBrokerFenced), errors.Is(err, meta.ErrStaleBrokerEpoch), errors.Is(err, meta.ErrUnknownBroker):
			b.registerAgain(ctx, err.Error())
		case ctx.Err() != nil:
			return
		default:
			b.log.Warn("heartbeat to the metadata leader failed; retrying", "error", err)
		}
	}
}

func (b *Broker) registerAgain(ctx context.Context, reason string) {
	b.log.Warn("registering this broker again", "reason", reason)
	if err := b.register(ctx); err != nil && ctx.Err() == nil {
		b.log.Warn("registration failed; retrying at the next heartbeat", "error", err)
	}
}
