package ingest

// DescribeLogDirs: v1-4
//
// Behavior:
//   - This broker has one log directory, its partitions directory, and
//     reports each partition it holds a replica of (leader or follower)
//     with its local size: the hot tail on this disk, not what tiered
//     storage holds in the bucket. OffsetLag is how far the replica's log
//     end is below the high watermark it knows (0 for a leader); IsFuture
//     is always false (there is no AlterReplicaLogDirs).
//   - Null topics: every partition held here; named ones: those asked for
//     that are held here (others are left out, as Kafka does).
//   - v4+ report the file system's total and usable bytes.
//
// Version notes:
//   - v0 is not served (its throttling semantics predate KIP-219). v1:
//     same as v0. v2: flexible. v3: top-level ErrorCode. v4: TotalBytes,
//     UsableBytes.

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/offload"
	"github.com/stratalog/strata/replica"
)

func init() { register(1, 4, handleDescribeLogDirs) }

func handleDescribeLogDirs(_ context.Context, b *Broker, r *request, req *kmsg.DescribeLogDirsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !b.authorizeCluster(r, acl.OpDescribe) {
		resp.ErrorCode = errorCode(ErrClusterAuthorization) // v3+; before, no directories
		return replyWith(resp), nil
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir, _ = filepath.Abs(b.config.DataDir)
	if usage, err := offload.Statfs(b.config.DataDir); err == nil {
		dir.TotalBytes, dir.UsableBytes = int64(usage.Total), int64(usage.Available)
	} else {
		dir.ErrorCode = kerr.KafkaStorageError.Code
		b.log.Warn("DescribeLogDirs: cannot read the data directory's file system", "error", err)
	}
	wanted := func(topic string, partition int32) bool {
		if req.Topics == nil {
			return true
		}
		return slices.ContainsFunc(req.Topics, func(t kmsg.DescribeLogDirsRequestTopic) bool {
			return t.Topic == topic && slices.Contains(t.Partitions, partition)
		})
	}
	held := b.partitions.All()
	slices.SortFunc(held, func(x, y *replica.Partition) int {
		return cmp.Or(strings.Compare(x.Topic(), y.Topic()), cmp.Compare(x.Index(), y.Index()))
	})
	for _, p := range held {
		if !wanted(p.Topic(), p.Index()) {
			continue
		}
		if n := len(dir.Topics); n == 0 || dir.Topics[n-1].Topic != p.Topic() {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic = p.Topic()
			dir.Topics = append(dir.Topics, t)
		}
		rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		rp.Partition, rp.Size = p.Index(), p.LocalBytes()
		rp.OffsetLag = max(p.HighWatermark()-p.Log().LogEndOffset(), 0)
		t := &dir.Topics[len(dir.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return replyWith(resp), nil
}
