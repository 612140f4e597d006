package meta

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCommit measures committed offset-commit-sized commands per
// second and the commit latency (Propose to applied on the proposing node),
// for one voter and three voters on loopback, with raft-boltdb's fsync on.
// Proposals are spread over every node, as brokers would make them:
//
//	batched    256 concurrent proposers; the batcher coalesces them
//	unbatched  one proposer, one command at a time
//
// Beside each figure is the limit measured in the same run on the same disk,
// just before and after: fdatasync calls per second (write 4 KiB +
// fdatasync; every Raft append costs at least one, and bbolt's commit two),
// and so commands per sync. cmds/entry counts the leader's log entries,
// commit kicks included (see leader.go).
//
//	go test -run '^$' -bench . ./meta/
func BenchmarkCommit(b *testing.B) {
	for _, voters := range []int{1, 3} {
		b.Run(fmt.Sprintf("voters=%d", voters), func(b *testing.B) {
			c := newCluster(b, voters, func(cfg *Config) {
				def := DefaultConfig()
				cfg.HeartbeatTimeout, cfg.ElectionTimeout = def.HeartbeatTimeout, def.ElectionTimeout
				cfg.LeaderLeaseTimeout, cfg.CommitTimeout = def.LeaderLeaseTimeout, def.CommitTimeout
				cfg.SnapshotInterval = def.SnapshotInterval
			})
			registerBroker(b, c.nodes[0], 1)
			if _, err := c.nodes[0].Propose(testCtx(b), topicCmd("bench", 16, 1)); err != nil {
				b.Fatal(err)
			}
			c.converged()
			b.Run("batched", func(b *testing.B) { benchCommits(b, c, 256) })
			b.Run("unbatched", func(b *testing.B) { benchCommits(b, c, 1) })
		})
	}
}

func benchCommits(b *testing.B, c *cluster, proposers int) {
	leader := c.leader()
	syncsBefore := syncsPerSecond(b, c.cfgs[0].DataDir)
	entriesBefore := leader.raft.LastIndex()
	latencies := make([]time.Duration, b.N)
	var next atomic.Int64
	var failed atomic.Value
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range proposers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				n := c.nodes[int(i)%len(c.nodes)]
				cmd := CommitOffsets{Group: fmt.Sprintf("bench-group-%d", w), CommitTimeMs: time.Now().UnixMilli(),
					Offsets: []OffsetCommit{{Topic: "bench", Partition: int32(w % 16), Offset: i, LeaderEpoch: 0}}}
				t0 := time.Now()
				if _, err := n.Propose(ctx, cmd); err != nil {
					failed.Store(err)
					return
				}
				latencies[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}

	slices.Sort(latencies)
	cmdsPerSec := float64(b.N) / elapsed.Seconds()
	// The disk's limit, measured just before and just after, on the disk
	// the nodes use.
	syncs := (syncsBefore + syncsPerSecond(b, c.cfgs[0].DataDir)) / 2
	entries := float64(leader.raft.LastIndex() - entriesBefore)
	b.ReportMetric(cmdsPerSec, "cmds/s")
	b.ReportMetric(float64(latencies[len(latencies)/2])/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(latencies[len(latencies)*99/100])/float64(time.Millisecond), "p99-ms")
	b.ReportMetric(syncs, "syncs/s-limit")
	b.ReportMetric(cmdsPerSec/syncs, "cmds/sync")
	b.ReportMetric(float64(b.N)/max(entries, 1), "cmds/entry")
}

// syncsPerSecond measures the disk's limit: 4 KiB writes each followed by
// fdatasync, for a quarter second, in dir.
func syncsPerSecond(b *testing.B, dir string) float64 {
	f, err := os.CreateTemp(dir, "fdatasync-probe-*")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, 4096)
	start := time.Now()
	n := 0
	for time.Since(start) < 250*time.Millisecond {
		if _, err := f.WriteAt(block, int64(n%256)*4096); err != nil {
			b.Fatal(err)
		}
		if err := fdatasync(f); err != nil {
			b.Fatal(err)
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds()
}
