package meta

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
)

// The batcher coalesces concurrent proposals into one Raft entry. A few
// workers (batchWorkers) share one queue. A free worker takes the first
// waiting proposal and every other one already queued, up to MaxBatchBytes,
// sends them as one entry — applied locally when this node leads, forwarded
// to the leader as one RPC otherwise — waits for the outcome and hands every
// proposer its own result. While the workers wait, new proposals queue, so
// the batch size follows the load: one proposer at a time gets one command
// per entry and no added wait; a commit storm gets a few large entries,
// each formed when a worker is free to send it.
//
// The workers belong to the Node and stop when its context is cancelled,
// failing what is still queued with ErrClosed. A worker waiting on Raft is
// released by Close shutting Raft down; one waiting on a forwarding RPC by
// the cancelled context.

// batchWorkers is how many entries (or forwarded batches) a node has
// outstanding at once. Two let one batch fill while the other commits; more
// split the queue into smaller batches and measured slower (bench_test.go).
const batchWorkers = 2

// proposal is one encoded command waiting for its result.
type proposal struct {
	ctx  context.Context
	data []byte
	// leaderOnly proposals fail with ErrNotLeader instead of being
	// forwarded: the leader's own decisions (fencing) must not outlive its
	// leadership.
	leaderOnly bool
	done       chan proposalResult // capacity 1: a worker never blocks on it
}

// proposalResult is one proposal's outcome. index is the Raft index of the
// entry that carried it, or 0 when it was not committed.
type proposalResult struct {
	index uint64
	epoch int64
	err   error
}

type batcher struct {
	node     *Node
	in       chan *proposal
	maxBytes int
}

func newBatcher(n *Node, maxBytes int) *batcher {
	return &batcher{node: n, in: make(chan *proposal, 4096), maxBytes: maxBytes}
}

// run is one batching worker.
func (b *batcher) run(ctx context.Context) {
	var carry *proposal
	for {
		first := carry
		carry = nil
		if first == nil {
			select {
			case first = <-b.in:
			case <-ctx.Done():
				b.failQueued()
				return
			}
		}
		batch := []*proposal{first}
		size := len(first.data)
	fill:
		for len(batch) < maxBatchCommands {
			select {
			case p := <-b.in:
				if size+len(p.data) > b.maxBytes {
					carry = p
					break fill
				}
				batch = append(batch, p)
				size += len(p.data)
			default:
				break fill
			}
		}
		b.send(batch)
	}
}

// failQueued answers every queued proposal with ErrClosed.
func (b *batcher) failQueued() {
	for {
		select {
		case p := <-b.in:
			p.done <- proposalResult{err: ErrClosed}
		default:
			return
		}
	}
}

// send sends one batch on its way, waits for its outcome and answers every
// proposal in it. Proposals whose callers gave up are dropped first.
func (b *batcher) send(batch []*proposal) {
	n := b.node
	isLeader := n.raft.State() == raft.Leader
	var leaderAddr raft.ServerAddress
	if !isLeader {
		leaderAddr, _ = n.raft.LeaderWithID()
	}
	live := batch[:0]
	for _, p := range batch {
		switch {
		case p.ctx.Err() != nil:
			p.done <- proposalResult{err: p.ctx.Err()}
		case !isLeader && p.leaderOnly:
			p.done <- proposalResult{err: ErrNotLeader}
		case !isLeader && leaderAddr == "":
			p.done <- proposalResult{err: ErrNoLeader}
		default:
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		return
	}
	n.metrics.batchCommands.Observe(float64(len(live)))
	var results []proposalResult
	if isLeader {
		results = b.apply(live)
	} else {
		results = b.forward(live, string(leaderAddr))
	}
	for i, p := range live {
		p.done <- results[i]
	}
}

func commandsOf(batch []*proposal) [][]byte {
	cmds := make([][]byte, len(batch))
	for i, p := range batch {
		cmds[i] = p.data
	}
	return cmds
}

func failAll(batch []*proposal, err error) []proposalResult {
	results := make([]proposalResult, len(batch))
	for i := range results {
		results[i].err = err
	}
	return results
}

// apply proposes the batch as one entry on this node, the leader, and
// waits until it is applied here.
func (b *batcher) apply(batch []*proposal) []proposalResult {
	future := b.node.raft.Apply(encodeBatch(commandsOf(batch)), 0)
	if err := future.Error(); err != nil {
		return failAll(batch, fromRaftError(err))
	}
	index := future.Index()
	switch resp := future.Response().(type) {
	case applyResult:
		if len(batch) == 1 {
			return []proposalResult{{index: index, epoch: resp.epoch, err: resp.err}}
		}
	case []applyResult:
		if len(resp) == len(batch) {
			results := make([]proposalResult, len(resp))
			for i, r := range resp {
				results[i] = proposalResult{index: index, epoch: r.epoch, err: r.err}
			}
			return results
		}
	case error:
		return failAll(batch, fmt.Errorf("%w: %w", ErrStopped, resp))
	}
	return failAll(batch, fmt.Errorf("meta: entry %d: unexpected state machine response %T", index, future.Response()))
}

// forward sends the batch to the leader as one RPC.
func (b *batcher) forward(batch []*proposal, leader string) []proposalResult {
	b.node.metrics.forwarded.Inc()
	ctx, cancel := forwardContext(b.node.ctx, batch)
	defer cancel()
	results, err := b.node.fwd.propose(ctx, leader, commandsOf(batch))
	if err != nil {
		return failAll(batch, err)
	}
	return results
}

// forwardContext bounds a forwarded batch by the latest deadline among its
// proposers (they share one RPC) and by the node's life.
func forwardContext(parent context.Context, batch []*proposal) (context.Context, context.CancelFunc) {
	var latest context.Context
	for _, p := range batch {
		d, ok := p.ctx.Deadline()
		if !ok {
			return context.WithTimeout(parent, forwardDefaultTimeout)
		}
		if latest == nil {
			latest = p.ctx
		} else if ld, _ := latest.Deadline(); d.After(ld) {
			latest = p.ctx
		}
	}
	d, _ := latest.Deadline()
	return context.WithDeadline(parent, d)
}

// fromRaftError maps Raft's errors to this package's: whether the entry was
// certainly not appended (ErrNotLeader, retried) or may have been
// (ErrOutcomeUnknown, not retried).
func fromRaftError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: %v", ErrNotLeader, err)
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrAbortedByRestore):
		return fmt.Errorf("%w: %v", ErrOutcomeUnknown, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrClosed
	default:
		return fmt.Errorf("meta: raft: %w", err)
	}
}
