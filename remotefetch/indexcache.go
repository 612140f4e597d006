package remotefetch

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/stratalog/strata/segmentobject"
)

// indexCache holds parsed segment tails (footer, offset and time indexes,
// epochs), apart from the blocks, as Kafka's RemoteIndexCache does: a read
// needs the index before any block, indexes are small and hot, and they
// must not be evicted by a scan's blocks. It is an LRU with a byte budget
// (cost: the tail's length) in front of a flightGroup, so concurrent first
// reads of a segment make one GET. Unlike the block cache it admits every
// entry: an index refused admission would cost a GET on every read.
type indexCache struct {
	capacity int64
	flights  *flightGroup[string, *segmentobject.Index]
	stats    cacheStats
	mu       struct {
		sync.Mutex
		entries map[string]*list.Element // of *indexEntry, by object key
		lru     list.List                // front: most recently used
		size    int64
	}
}

type indexEntry struct {
	key  string
	ix   *segmentobject.Index
	cost int64
}

func newIndexCache(capacity int64, life *lifecycle) *indexCache {
	c := &indexCache{capacity: capacity, flights: newFlightGroup[string](life, valueRefs[*segmentobject.Index]{})}
	c.mu.entries = make(map[string]*list.Element)
	return c
}

// get returns the segment's index from the cache, or loads it with load.
func (c *indexCache) get(ctx context.Context, key string, load func(context.Context) (*segmentobject.Index, error)) (*segmentobject.Index, error) {
	if ix, ok := c.lookup(key); ok {
		c.stats.hits.Add(1)
		return ix, nil
	}
	ix, joined, err := c.flights.do(ctx, key, func(ctx context.Context) (*segmentobject.Index, error) {
		ix, err := load(ctx)
		if err == nil {
			c.add(key, ix)
		}
		return ix, err
	})
	if joined {
		c.stats.merged.Add(1)
	} else {
		c.stats.misses.Add(1)
	}
	return ix, err
}

func (c *indexCache) lookup(key string) (*segmentobject.Index, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.mu.entries[key]
	if !ok {
		return nil, false
	}
	c.mu.lru.MoveToFront(e)
	return e.Value.(*indexEntry).ix, true
}

// add caches ix, evicting the least recently used indexes past the budget.
// An index larger than the whole budget is not kept.
func (c *indexCache) add(key string, ix *segmentobject.Index) {
	cost := ix.Footer.TailSize()
	if cost > c.capacity {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.mu.entries[key]; ok {
		return
	}
	c.mu.entries[key] = c.mu.lru.PushFront(&indexEntry{key: key, ix: ix, cost: cost})
	c.mu.size += cost
	for c.mu.size > c.capacity {
		oldest := c.mu.lru.Back()
		e := oldest.Value.(*indexEntry)
		c.mu.lru.Remove(oldest)
		delete(c.mu.entries, e.key)
		c.mu.size -= e.cost
		c.stats.evictions.Add(1)
	}
}

// Metrics reports the cache's counters and its size and budget in bytes.
func (c *indexCache) Metrics() CacheMetrics {
	m := c.stats.snapshot()
	c.mu.Lock()
	m.Size = c.mu.size
	c.mu.Unlock()
	m.Capacity = c.capacity
	return m
}

// loadIndex fetches and verifies a segment's tail: one suffix GET of the
// size the manifest records (or Config.IndexTailGuess), a second of the
// exact size if the guess was short, and one fresh GET if the tail fails
// its CRCs, before giving up with ErrCorrupt. The object's footer must
// describe the segment the manifest does.
func (r *Reader) loadIndex(ctx context.Context, seg segmentobject.ManifestSegment) (*segmentobject.Index, error) {
	n := seg.TailBytes
	if n == 0 {
		n = r.cfg.IndexTailGuess
	}
	resized, refetched := false, false
	for {
		var tail []byte
		var size int64
		err := r.retry.do(ctx, kindIndex, seg.Key, func() int { return len(tail) }, func(ctx context.Context) (err error) {
			tail, size, err = r.bucket.ReadSuffix(ctx, seg.Key, n)
			return err
		})
		if err != nil {
			return nil, err
		}
		ix, err := segmentobject.ParseTail(tail, size)
		var short *segmentobject.ShortTailError
		switch {
		case errors.As(err, &short) && !resized && short.Need <= size:
			n, resized = short.Need, true
			continue
		case errors.Is(err, segmentobject.ErrCorrupt) && !refetched:
			r.log.Warn("segment tail failed verification, fetching it again", "key", seg.Key, "err", err)
			refetched = true
			continue
		case errors.Is(err, segmentobject.ErrUnsupportedVersion):
			return nil, fmt.Errorf("remotefetch: %s: %w", seg.Key, err)
		case err != nil:
			return nil, fmt.Errorf("%w: %s tail: %w", ErrCorrupt, seg.Key, err)
		}
		if f := ix.Footer; f.BaseOffset != seg.BaseOffset || f.NextOffset != seg.NextOffset() || (seg.LogBytes > 0 && ix.LogLength() != seg.LogBytes) {
			return nil, fmt.Errorf("%w: %s holds offsets [%d, %d) in a log of %d bytes, the manifest says [%d, %d) in %d",
				ErrCorrupt, seg.Key, f.BaseOffset, f.NextOffset, ix.LogLength(), seg.BaseOffset, seg.NextOffset(), seg.LogBytes)
		}
		if need := ix.Footer.TailSize(); int64(len(tail)) > need {
			// Keep only the tail itself, not the end of the log the guess
			// brought along: the index holds on to the bytes it parsed.
			return segmentobject.ParseTail(bytes.Clone(tail[int64(len(tail))-need:]), size)
		}
		return ix, nil
	}
}
