package remotefetch

import (
	"strconv"
	"sync"

	"github.com/dgraph-io/ristretto/v2"
)

// blockID names one aligned block of a segment's log section: bytes
// [index×BlockSize, (index+1)×BlockSize) of the object at key, cut at the
// end of the log. Blocks never cover the indexes, which the index cache
// holds.
type blockID struct {
	key   string
	index int64
}

// blockCache holds loaded log blocks: a ristretto cache (sharded
// internally, TinyLFU admission, sampled-LFU eviction) with a byte budget,
// in front of a flightGroup that gives concurrent misses of one block one
// GET. A block enters the cache when its GET completes; its batches are
// checked as they arrive or by the reads that use them (batch CRCs), and a
// block that fails is evicted (evict) so that the retry fetches it afresh.
// The cache holds a reference to each block it keeps (see block), given
// back when ristretto reports the entry gone: evicted, rejected, deleted,
// replaced or cleared.
type blockCache struct {
	cache   *ristretto.Cache[string, *block]
	flights *flightGroup[blockID, *block]
	pool    *blockPool
	stats   cacheStats
	// mu keeps calls off the ristretto cache once close has begun: its
	// Close closes the channel that Set, Del and Wait send on.
	mu struct {
		sync.RWMutex
		closed bool
	}
}

func newBlockCache(cfg Config, life *lifecycle) (*blockCache, error) {
	c := &blockCache{
		flights: newFlightGroup[blockID](life, blockRefs),
		pool:    &blockPool{size: cfg.BlockSize},
	}
	blocks := max(cfg.BlockCacheBytes/cfg.BlockSize, 1)
	cache, err := ristretto.NewCache(&ristretto.Config[string, *block]{
		// Ristretto's advice: ten counters per entry the cache can hold.
		NumCounters:        10 * blocks,
		MaxCost:            cfg.BlockCacheBytes,
		BufferItems:        64,
		IgnoreInternalCost: true,
		OnEvict:            func(*ristretto.Item[*block]) { c.stats.evictions.Add(1) },
		OnReject:           func(*ristretto.Item[*block]) { c.stats.rejections.Add(1) },
		OnExit:             uncache,
	})
	if err != nil {
		return nil, err
	}
	c.cache = cache
	return c, nil
}

// cacheKey is the block's ristretto key. Object keys hold no control
// characters (objstore's key grammar), so NUL separates unambiguously.
func cacheKey(id blockID) string {
	return id.key + "\x00" + strconv.FormatInt(id.index, 10)
}

// blockRefs counts a flight's references to its block.
var blockRefs = valueRefs[*block]{hold: (*block).hold, release: (*block).release}

// uncache gives back the cache's reference to a block ristretto no longer
// holds (nil when it had nothing under the key), once.
func uncache(b *block) {
	if b != nil && b.cached.CompareAndSwap(true, false) {
		b.release()
	}
}

// get returns the cached block, if the cache holds it, with a reference
// for the caller.
func (c *blockCache) get(id blockID) (*block, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.mu.closed {
		return nil, false
	}
	b, ok := c.cache.Get(cacheKey(id))
	if !ok || !b.tryHold() {
		return nil, false
	}
	return b, true
}

// put offers a block the caller holds to the cache, which takes a
// reference of its own if it keeps it, and waits until the cache has
// decided, so that a read arriving after the block's GET ended finds it
// there rather than making a second GET. The admission policy may refuse
// it; read-ahead windows keep the blocks a consumer is about to use either
// way.
func (c *blockCache) put(id blockID, b *block) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.mu.closed {
		return
	}
	b.hold()
	b.cached.Store(true)
	if !c.cache.Set(cacheKey(id), b, int64(len(b.data))) {
		uncache(b) // dropped: ristretto's buffer of sets was full
	}
	c.cache.Wait()
}

// evict drops a block, so that the next read of it makes a new GET.
func (c *blockCache) evict(id blockID) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.mu.closed {
		return
	}
	c.cache.Del(cacheKey(id))
}

// Metrics reports the cache's counters and its size and budget in bytes.
func (c *blockCache) Metrics() CacheMetrics {
	m := c.stats.snapshot()
	m.BuffersReused = c.pool.reused.Load()
	m.BufferBytes = c.pool.held.Load() * c.pool.size
	c.mu.RLock()
	defer c.mu.RUnlock()
	m.Capacity = c.cache.MaxCost()
	if !c.mu.closed {
		m.Size = m.Capacity - c.cache.RemainingCost()
	}
	return m
}

// close stops ristretto's goroutines and empties the cache. The flights'
// goroutines belong to the Reader's lifecycle, closed before.
func (c *blockCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.mu.closed {
		c.mu.closed = true
		c.cache.Close()
	}
}
