package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Options says what load Start puts on a cluster.
type Options struct {
	Seeds []string // seed brokers, host:port
	Topic string   // the topic to produce to and consume from; it must exist

	// Producers is how many producers send, each with its own client and
	// named "producer-<i>" in its values (default 1).
	Producers int
	// Interval is the time between one producer's sends (default 10ms).
	Interval time.Duration
	// ProduceRequestTimeout is kgo.ProduceRequestTimeout, how long a broker
	// may take to answer a produce (default kgo's, 10s).
	ProduceRequestTimeout time.Duration

	// Consume adds a consumer group member that reads the topic from the
	// start for the whole run, reporting each record as Consumed. It
	// commits no offsets.
	Consume bool
	// Group is its group (default "ledger-<topic>").
	Group string

	// ClientOptions are appended to every client's options, after the
	// load's own, so that they win: a dialer through a fault proxy, or
	// kgo.MaxVersions.
	ClientOptions []kgo.Opt
}

// Load is producers, and perhaps a consumer, reporting into a Ledger until
// Stop.
type Load struct {
	ledger    *Ledger
	producers []*kgo.Client
	consumer  *kgo.Client // nil without Options.Consume
	cancel    context.CancelFunc
	loops     sync.WaitGroup // the send and poll loops
	pending   sync.WaitGroup // produces whose promise has not run
	stopOnce  sync.Once
	stopErr   error
}

// stopPatience bounds Stop's wait for outstanding produces, whatever its
// context says.
const stopPatience = time.Minute

// Start creates the clients and starts the send loops and, with
// o.Consume, the poll loop. Every send is an idempotent produce with
// acks=all and kgo's unbounded retries, so it keeps retrying across leader
// changes until it is acknowledged or Stop gives up on it; its outcome goes
// into led.
func Start(led *Ledger, o Options) (*Load, error) {
	o = o.withDefaults()
	ld := &Load{ledger: led}
	for range o.Producers {
		cl, err := kgo.NewClient(o.producerOptions()...)
		if err != nil {
			ld.close()
			return nil, fmt.Errorf("ledger: producer client: %w", err)
		}
		ld.producers = append(ld.producers, cl)
	}
	if o.Consume {
		cl, err := kgo.NewClient(o.consumerOptions()...)
		if err != nil {
			ld.close()
			return nil, fmt.Errorf("ledger: consumer client: %w", err)
		}
		ld.consumer = cl
	}

	ctx, cancel := context.WithCancel(context.Background())
	ld.cancel = cancel
	for i, cl := range ld.producers {
		ld.loops.Add(1)
		go ld.send(ctx, cl, o.Topic, fmt.Sprintf("producer-%d", i), o.Interval)
	}
	if ld.consumer != nil {
		ld.loops.Add(1)
		go ld.poll(ctx)
	}
	return ld, nil
}

func (o Options) withDefaults() Options {
	if o.Producers == 0 {
		o.Producers = 1
	}
	if o.Interval == 0 {
		o.Interval = 10 * time.Millisecond
	}
	if o.Group == "" {
		o.Group = "ledger-" + o.Topic
	}
	return o
}

func (o Options) producerOptions() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.Seeds...),
		// Idempotence is kgo's default, and so are unbounded
		// RecordRetries; acks=all is spelled out as the premise of
		// every check.
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// Spread each producer's records over every partition, so a
		// fault anywhere meets some of them.
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
	}
	if o.ProduceRequestTimeout > 0 {
		opts = append(opts, kgo.ProduceRequestTimeout(o.ProduceRequestTimeout))
	}
	return append(opts, o.ClientOptions...)
}

func (o Options) consumerOptions() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.Seeds...),
		kgo.ConsumeTopics(o.Topic),
		kgo.ConsumerGroup(o.Group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// What the member saw is in the ledger; committing it would
		// only make Stop wait for a broker that may be down (kgo
		// commits on leaving, retrying).
		kgo.DisableAutoCommit(),
	}
	return append(opts, o.ClientOptions...)
}

// send is one producer's loop, owned by the Load: it sends producer's
// next value every interval until ctx is done. TryProduce never blocks, so
// the loop stops promptly however long the cluster is away; past kgo's
// buffer limit a send fails at once (ErrMaxBuffered), unsent.
func (ld *Load) send(ctx context.Context, cl *kgo.Client, topic, producer string, interval time.Duration) {
	defer ld.loops.Done()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for seq := int64(0); ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ld.pending.Add(1)
		cl.TryProduce(context.Background(), &kgo.Record{Topic: topic, Value: Value(producer, seq)}, ld.resolve)
	}
}

// resolve is every send's promise.
func (ld *Load) resolve(r *kgo.Record, err error) {
	defer ld.pending.Done()
	if err != nil {
		ld.ledger.Failed(r, err)
		return
	}
	ld.ledger.Acked(r)
}

// poll is the consumer's loop, owned by the Load: it reports every record
// it is given until ctx is done. Fetch errors are not the ledger's
// business (faults cause them); kgo retries.
func (ld *Load) poll(ctx context.Context) {
	defer ld.loops.Done()
	for ctx.Err() == nil {
		ld.consumer.PollFetches(ctx).EachRecord(ld.ledger.Consumed)
	}
}

// Stop ends the loops, waits until ctx is done or a minute has passed for
// the outstanding produces to resolve, and closes the clients. Closing
// fails the produces still outstanding (kgo.ErrClientClosed), so when Stop
// returns every produce has an outcome in the ledger. The error says which
// producers had produces outstanding at the deadline. Calls after the first
// return its result.
func (ld *Load) Stop(ctx context.Context) error {
	ld.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, stopPatience)
		defer cancel()
		ld.cancel()
		ld.loops.Wait()
		var errs []error
		for i, cl := range ld.producers {
			if err := cl.Flush(ctx); err != nil {
				errs = append(errs, fmt.Errorf("ledger: producer-%d: produces outstanding at the deadline were failed: %w", i, err))
			}
		}
		if ld.consumer != nil {
			// A group not left now is left by the session timeout;
			// either way the ledger has what the member saw.
			_ = ld.consumer.LeaveGroupContext(ctx)
		}
		ld.close()
		ld.pending.Wait()
		ld.stopErr = errors.Join(errs...)
	})
	return ld.stopErr
}

// close closes every client.
func (ld *Load) close() {
	for _, cl := range ld.producers {
		cl.Close()
	}
	if ld.consumer != nil {
		ld.consumer.Close()
	}
}
