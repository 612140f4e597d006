package replica

import (
	"github.com/stratalog/strata/hotlog"
	"github.com/stratalog/strata/segmentobject"
)

// continueBucketLocked makes a tiered partition that starts leading
// continue the log its bucket holds. The bucket's segments were uploaded
// by a former leader below its high watermark (and its remote log start
// moved no higher than one), so a replica elected cleanly holds every
// offset they do, in the same leader epochs, and keeps its log. One
// elected uncleanly (or one that lost an unsynced tail under flush.ms) may
// end below the bucket's end (its last segment's, or with none left its
// remote log start), or hold other records at offsets the bucket holds
// (its log diverged from the one uploaded). Leading from that log, it
// would write new records at offsets the bucket already serves, or below
// the remote log start, which no read serves, and local retention, which
// takes the bucket as holding every offset below its end, would then
// delete them. Its hot log restarts, empty, at the bucket's end instead:
// what the bucket holds stays readable, and what the replica held from a
// divergence on is dropped, as an unclean election drops what the former
// leader held alone. appendMu must be held, or the partition not yet
// shared.
func (p *Partition) continueBucketLocked() error {
	if !p.tiered {
		return nil // an untiered partition's bucket takes nothing more
	}
	m, found := p.manager.deps.Meta.State().Manifest(p.topic, p.index)
	if !found {
		return nil
	}
	committed := m.Committed()
	end := committed.NextOffset()
	logStart, logEnd := p.log.LogStartOffset(), p.log.LogEndOffset()
	if logStart > end {
		// The hot log starts past the bucket's end (offload then moves
		// the remote log start up to it).
		return nil
	}
	// With no segment left, end is the remote log start (retention
	// expired them all, or DeleteRecords moved it past them): no offset
	// below it is served, so records written there would be lost.
	at, diverged := logEnd, logEnd < end
	if !diverged && len(committed.Segments) > 0 {
		at, diverged = divergence(committed.EpochsBelow(end), p.log.Epochs(), max(logStart, committed.LogStartOffset), end)
	}
	if !diverged {
		return nil
	}
	p.manager.log.Warn("the new leader's log does not hold what its bucket holds: it restarts at the bucket's end",
		"topic", p.topic, "partition", p.index, "log_start", logStart, "log_end", logEnd, "bucket_end", end, "differs_from", at)
	return p.resetLocked(end, nil)
}

// divergence returns the first offset in [from, to) that the leader-epoch
// lineages bucket and local (each sorted by start offset) both cover and
// give different epochs, and whether there is one. Two logs whose offsets
// carry the same epochs hold the same records.
func divergence(bucket []segmentobject.EpochEntry, local []hotlog.EpochEntry, from, to int64) (int64, bool) {
	check := func(at int64) bool {
		b, l := int32(-1), int32(-1)
		for _, e := range bucket {
			if e.StartOffset <= at {
				b = e.Epoch
			}
		}
		for _, e := range local {
			if e.StartOffset <= at {
				l = e.Epoch
			}
		}
		return b >= 0 && l >= 0 && b != l
	}
	// The lineages change only where an entry starts: compare there.
	points := []int64{from}
	for _, e := range bucket {
		points = append(points, e.StartOffset)
	}
	for _, e := range local {
		points = append(points, e.StartOffset)
	}
	first := int64(-1)
	for _, at := range points {
		if at >= from && at < to && (first < 0 || at < first) && check(at) {
			first = at
		}
	}
	return first, first >= 0
}
