package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// descriptorLimit is the process's RLIMIT_NOFILE after raiseDescriptorLimit.
type descriptorLimit struct {
	soft, hard uint64
	// was is the soft limit the process started with.
	was uint64
}

// raiseDescriptorLimit raises the soft descriptor limit to the hard limit,
// as Kafka's service units ask operators to (LimitNOFILE): the broker's
// partitions, connections and bucket connections all hold descriptors,
// and the shell's usual soft limit of 1,024 is the one that runs out. The
// broker then shares the limit out (ingest/descriptors.go) and derives
// max.broker.partitions from it. Only the soft limit moves: raising the
// hard limit needs privileges and is the operator's decision.
func raiseDescriptorLimit() (descriptorLimit, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return descriptorLimit{}, fmt.Errorf("reading the descriptor limit (RLIMIT_NOFILE): %w", err)
	}
	l := descriptorLimit{soft: rl.Cur, hard: rl.Max, was: rl.Cur}
	if rl.Cur >= rl.Max {
		return l, nil
	}
	rl.Cur = rl.Max
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return descriptorLimit{}, fmt.Errorf("raising the descriptor limit from %d to the hard limit %d: %w", l.was, rl.Max, err)
	}
	l.soft = rl.Max
	return l, nil
}

// brokerLimit is the limit as the broker config takes it: the soft limit,
// bounded so it fits an int (RLIM_INFINITY does not).
func (l descriptorLimit) brokerLimit() int { return int(min(l.soft, 1<<30)) }
