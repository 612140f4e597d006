package remotefetch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// FetchResult is one partition's part of a FetchMany.
type FetchResult struct {
	Result
	// Err is the read's error: ErrTimeout when remote.fetch.max.wait.ms
	// passed first, else as Read's.
	Err error
}

// FetchMany reads several partitions' tiered data in parallel, at most
// FetchConcurrency at once, and returns, in request order, what completed
// within remote.fetch.max.wait.ms (Config.FetchMaxWait), apart from the
// client's fetch.max.wait.ms. It is what the broker's Fetch handler calls
// for the partitions whose fetch offset is below the local log start.
//
// At the deadline, partitions still reading get ErrTimeout. Their block
// loads are not abandoned: they finish in the background and land in the
// cache and in the consumer's read-ahead window, so the client's next
// fetch, which asks for the same offset, finds them. FetchMany returns
// once every read it started has (they stop waiting at the deadline).
func (r *Reader) FetchMany(ctx context.Context, reqs []Request) []FetchResult {
	results := make([]FetchResult, len(reqs))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := afterFunc(r.clock, r.cfg.FetchMaxWait, func() { cancel(errFetchDeadline) })
	defer stop()

	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(reqs), r.cfg.FetchConcurrency) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(reqs) {
					return
				}
				if ctx.Err() != nil {
					results[i].Err = context.Cause(ctx)
					continue
				}
				res, err := r.Read(ctx, reqs[i])
				results[i] = FetchResult{Result: res, Err: err}
			}
		})
	}
	wg.Wait()
	for _, res := range results {
		if errors.Is(res.Err, ErrTimeout) {
			r.metrics.fetchTimeouts.Add(1)
		}
	}
	return results
}
