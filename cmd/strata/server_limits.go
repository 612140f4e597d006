package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// descriptorLimit is the process's RLIMIT_NOFILE after raiseDescriptorLimit.
type descriptorLimit struct {
	soft, hard uint64
}

// raiseDescriptorLimit raises the soft descriptor limit to the hard limit,
// as Kafka's service units ask operators to (LimitNOFILE): the broker's
// partitions, connections and bucket connections all hold descriptors,
// and a shell's usual soft limit of 1,024 is the one that runs out. The
// broker then shares the limit out (ingest/descriptors.go) and derives
// max.broker.partitions from it. Only the soft limit moves: raising the
// hard limit needs privileges and is the operator's decision.
//
// Go's runtime (1.19 on) already raises the soft limit to one below the
// hard limit as the process starts, so the limit the shell gave cannot be
// seen here; doing it explicitly keeps the broker's budget from resting
// on that, and takes the last descriptor too.
func raiseDescriptorLimit() (descriptorLimit, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return descriptorLimit{}, fmt.Errorf("reading the descriptor limit (RLIMIT_NOFILE): %w", err)
	}
	if rl.Cur < rl.Max {
		raised := unix.Rlimit{Cur: rl.Max, Max: rl.Max}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &raised); err != nil {
			return descriptorLimit{}, fmt.Errorf("raising the descriptor limit from %d to the hard limit %d: %w", rl.Cur, rl.Max, err)
		}
		rl = raised
	}
	return descriptorLimit{soft: rl.Cur, hard: rl.Max}, nil
}

// brokerLimit is the limit as the broker config takes it: the soft limit,
// bounded so it fits an int (RLIM_INFINITY does not).
func (l descriptorLimit) brokerLimit() int { return int(min(l.soft, 1<<30)) }
