package offload

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/stratalog/strata/objstore"
)

// Retries. Stores never retry (objstore/doc.go), so the Manager does: each
// attempt of a store call runs under its own timeout, measured on the
// injected clock, and failed attempts are retried with exponential backoff
// and jitter, up to Config.MaxAttempts per pass. A task whose pass fails
// runs again after a backoff of its own, so a failing upload is retried
// until it succeeds, while the stall alarm (copy.go) reports it.

// backoff returns the wait before retry n (n >= 1): RetryBaseDelay ×
// 2^(n-1), at most RetryMaxDelay, half of it fixed and half drawn at
// random, so that retries of many partitions spread out.
func (m *Manager) backoff(n int) time.Duration {
	d := m.cfg.RetryMaxDelay
	if n <= 30 {
		d = min(m.cfg.RetryBaseDelay<<(n-1), m.cfg.RetryMaxDelay)
	}
	half := d / 2
	return half + time.Duration(m.jitter()*float64(d-half))
}

// sleep waits d on the clock, or until ctx ends.
func (m *Manager) sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-m.clock.After(d):
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// withTimeout returns a context that ends with ErrAttemptTimeout once d has
// passed on the clock. The watchdog goroutine belongs to the attempt: the
// returned cancel ends it and waits for it.
func (m *Manager) withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-m.clock.After(d):
			cancel(fmt.Errorf("%w after %v", ErrAttemptTimeout, d))
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel(context.Canceled)
		<-done
	}
}

// attempt runs op once under a timeout of d. An error caused by the timeout
// wraps ErrAttemptTimeout.
func (m *Manager) attempt(ctx context.Context, d time.Duration, op func(context.Context) error) error {
	actx, cancel := m.withTimeout(ctx, d)
	defer cancel()
	err := op(actx)
	if err != nil && ctx.Err() == nil {
		if cause := context.Cause(actx); errors.Is(cause, ErrAttemptTimeout) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
	}
	return err
}

// retry runs op until it succeeds, fails for good, or has been tried
// Config.MaxAttempts times, backing off between attempts. Each attempt gets
// timeout. onFailure, if set, sees every failed attempt. It returns the
// number of attempts made and the last error.
func (m *Manager) retry(ctx context.Context, timeout time.Duration, op func(context.Context) error, onFailure func(attempt int, err error)) (int, error) {
	for n := 1; ; n++ {
		err := m.attempt(ctx, timeout, op)
		if err == nil {
			return n, nil
		}
		if onFailure != nil {
			onFailure(n, err)
		}
		if ctx.Err() != nil || permanent(err) || n >= m.cfg.MaxAttempts {
			return n, err
		}
		if serr := m.sleep(ctx, m.backoff(n)); serr != nil {
			return n, err
		}
	}
}

// permanent reports errors that another attempt cannot cure: a key the
// store refuses (by objstore's grammar, or a file system whose names are
// shorter than the 255 bytes keys assume), a body that is not the declared
// size (a bug or a changed file), a segment whose files went away, an
// object whose batches do not check.
func permanent(err error) bool {
	return errors.Is(err, objstore.ErrInvalidKey) || errors.Is(err, syscall.ENAMETOOLONG) ||
		errors.Is(err, objstore.ErrSizeMismatch) || errors.Is(err, objstore.ErrBucketNotFound) ||
		errors.Is(err, errNotReady) || errors.Is(err, ErrCorruptObject)
}
