package group

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/meta"
)

// BenchmarkOffsetCommits measures sustained offset commits: 16 committers
// across 8 groups, each commit carrying every one of 100 partitions, all
// through the coordinator into the metadata group. It reports commit
// requests and partition offsets per second, and Raft entries per commit
// (below 1 when the metadata batcher coalesces concurrent commits).
func BenchmarkOffsetCommits(b *testing.B) {
	const groups, partitions = 8, 100
	node := newTestMeta(b, partitions)
	c := newTestCoordinator(b, node, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var next atomic.Int64
	startIndex := node.State().Index()
	b.SetParallelism(8) // 16 committers on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		offsets := make([]meta.OffsetCommit, partitions)
		for pb.Next() {
			n := next.Add(1)
			for p := range offsets {
				offsets[p] = meta.OffsetCommit{Topic: "t", Partition: int32(p), Offset: n, LeaderEpoch: -1}
			}
			errs, err := c.Commit(ctx, CommitRequest{Group: fmt.Sprintf("g%d", n%groups), Generation: -1, Offsets: offsets})
			if err == nil {
				for _, e := range errs {
					err = e
				}
			}
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	elapsed := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/elapsed, "commits/s")
	b.ReportMetric(float64(b.N*partitions)/elapsed, "offsets/s")
	b.ReportMetric(float64(node.State().Index()-startIndex)/float64(b.N), "raft-entries/commit")
}
