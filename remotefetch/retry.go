package remotefetch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stratalog/strata/objstore"
)

// requestKind names what a bucket request fetches, for metrics and errors.
type requestKind int

const (
	kindBlock requestKind = iota // an aligned block of a segment's log
	kindIndex                    // a segment's tail: footer, indexes, epochs
	kindCount
)

var kindNames = [kindCount]string{kindBlock: "block", kindIndex: "index"}

func (k requestKind) String() string { return kindNames[k] }

// errAttemptTimeout is the cancellation cause of an attempt that ran out of
// Config.AttemptTimeout.
var errAttemptTimeout = errors.New("remotefetch: request timed out")

// retrier makes one bucket request: each attempt holds one of
// MaxConcurrentGets slots and has AttemptTimeout; transient failures are
// retried up to MaxAttempts with capped exponential backoff and jitter,
// timed by the injected clock. A request that cannot succeed (missing
// object, invalid range or key) is not retried.
type retrier struct {
	cfg     Config
	clock   Clock
	slots   chan struct{}
	metrics *metrics
}

func newRetrier(cfg Config, m *metrics) *retrier {
	return &retrier{cfg: cfg, clock: cfg.clock(), slots: make(chan struct{}, cfg.MaxConcurrentGets), metrics: m}
}

// do runs op until it succeeds, fails for good, the attempts run out, or ctx
// ends. bytes is what a successful op read, for metrics.
func (r *retrier) do(ctx context.Context, kind requestKind, key string, bytes func() int, op func(context.Context) error) error {
	backoff := r.cfg.RetryBackoff
	for attempt := 1; ; attempt++ {
		err := r.attempt(ctx, kind, op)
		switch {
		case err == nil:
			r.metrics.bucketBytes[kind].Add(int64(bytes()))
			return nil
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case errors.Is(err, objstore.ErrNotFound):
			return fmt.Errorf("%w: %s: %w", ErrSegmentMissing, key, err)
		case errors.Is(err, objstore.ErrInvalidRange), errors.Is(err, objstore.ErrInvalidKey), errors.Is(err, objstore.ErrBucketNotFound):
			return fmt.Errorf("remotefetch: %s %s: %w", kind, key, err)
		case attempt >= r.cfg.MaxAttempts:
			return fmt.Errorf("%w: %s %s, %d attempts: %w", ErrUnavailable, kind, key, attempt, err)
		}
		r.metrics.retries[kind].Add(1)
		select {
		case <-r.clock.After(jitter(backoff)):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		backoff = min(2*backoff, r.cfg.RetryBackoffMax)
	}
}

// attempt makes one try of op, in a slot, within AttemptTimeout.
func (r *retrier) attempt(ctx context.Context, kind requestKind, op func(context.Context) error) error {
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-r.slots }()

	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := afterFunc(r.clock, r.cfg.AttemptTimeout, func() { cancel(errAttemptTimeout) })
	start := r.clock.Now()
	err := op(actx)
	stop()
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errAttemptTimeout) {
		err = fmt.Errorf("%w after %v: %w", errAttemptTimeout, r.cfg.AttemptTimeout, err)
	}
	r.metrics.bucketRequest(kind, r.clock.Now().Sub(start), err)
	return err
}

// jitter spreads a backoff over [d/2, d), so that readers that failed
// together do not retry together.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}
