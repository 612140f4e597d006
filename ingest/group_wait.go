package ingest

import (
	"context"

	"github.com/stratalog/strata/group"
)

// groupWait bounds a JoinGroup or SyncGroup that waits for a rebalance: it
// also ends when the broker starts draining, so shutdown never waits for a
// rebalance; the member then hears COORDINATOR_NOT_AVAILABLE and looks for
// the coordinator again. The goroutine it starts ends with the returned
// cancel, which the handler defers.
func groupWait(ctx context.Context, b *Broker) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-b.draining:
			cancel(group.ErrClosed)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

// waitError is why a wait from groupWait ended early.
func waitError(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	return err
}
