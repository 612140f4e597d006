package main

import (
	"fmt"
	"os"
	"runtime"

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

// minProcs is the fewest Ps (GOMAXPROCS) strata server runs with. Every
// partition's flusher blocks in fdatasync, and Go runs a goroutine only on
// a P: a P whose goroutine sits in a system call passes to another only
// once the runtime's monitor notices, so with GOMAXPROCS at the machine's
// two cores about two partitions' fdatasyncs were in flight at a time
// (a trace of 512 partitions under produce load showed 1.9 on average,
// while the disk took 33,000 fdatasyncs/s from 512 threads). With 16, the
// produce p50 at 512 partitions and 40 MB/s fell from 500-520 ms to
// 190-200 ms, and 8 partitions at 200 MB/s lost nothing (docs/bench.md,
// "Produce latency while tiering"). Only where each partition fdatasyncs
// its own log (hotlog.SyncfsMayMiss): where a syncfs reports failed writes
// every partition shares one syncfs round (hotlog.DiskSync), and there, at
// 512 partitions and 40 MB/s, 16 Ps only cost (p50 43-53 ms against 33-42
// ms at 2, alternating runs).
const minProcs = 16

// raiseProcs raises GOMAXPROCS to minProcs, unless the GOMAXPROCS
// environment variable names a value, which is the operator's to keep. It
// returns the value before and after.
func raiseProcs() (before, after int) {
	before = runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") != "" || before >= minProcs {
		return before, before
	}
	runtime.GOMAXPROCS(minProcs)
	return before, minProcs
}
