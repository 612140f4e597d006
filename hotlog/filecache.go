package hotlog

import "sync"

// FileCache bounds how many sealed segments have open files (one file
// descriptor for the .log, and the two index mappings) across every Log
// that shares it, so a broker with thousands of partitions keeps a fixed
// number of descriptors for its cold segments. Active segments are not
// counted: each Log keeps its active segment open.
//
// Eviction is CLOCK, an approximation of LRU whose hits only set a bit, so
// readers that find a segment open never take the cache's lock. An evicted
// segment's files close when the last reader holding them releases its
// Section; until then they are over the limit. A FileCache is safe for
// concurrent use by any number of Logs.
//
// The cache holds no references of its own: a segment's files pointer
// (segment.files) owns one, and whoever takes the files out of that pointer
// (eviction here, or the Log detaching the segment) releases it.
type FileCache struct {
	limit int
	mu    struct {
		sync.Mutex
		ring []*segmentFiles
		hand int
	}
}

// NewFileCache returns a cache keeping at most maxOpenSegments sealed
// segments open (at least one).
func NewFileCache(maxOpenSegments int) *FileCache {
	return &FileCache{limit: max(1, maxOpenSegments)}
}

// Len returns the number of sealed segments the cache holds open.
func (c *FileCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.ring)
}

// insert adds the files of a sealed segment, which segment.files already
// points to, and evicts others while the cache is over its limit.
func (c *FileCache) insert(f *segmentFiles) {
	f.used.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	f.slot = len(c.mu.ring)
	c.mu.ring = append(c.mu.ring, f)
	for len(c.mu.ring) > c.limit {
		victim := c.mu.ring[c.mu.hand]
		if victim.used.Swap(false) {
			c.mu.hand = (c.mu.hand + 1) % len(c.mu.ring)
			continue
		}
		c.removeLocked(victim)
		if victim.segment.files.CompareAndSwap(victim, nil) {
			victim.release()
		}
	}
}

// forget takes f out of the cache, if it is there.
func (c *FileCache) forget(f *segmentFiles) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.slot >= 0 {
		c.removeLocked(f)
	}
}

// removeLocked unlinks f from the ring by moving the last entry into its
// slot. c.mu must be held.
func (c *FileCache) removeLocked(f *segmentFiles) {
	last := len(c.mu.ring) - 1
	moved := c.mu.ring[last]
	c.mu.ring[f.slot] = moved
	moved.slot = f.slot
	c.mu.ring[last] = nil
	c.mu.ring = c.mu.ring[:last]
	f.slot = -1
	if c.mu.hand >= len(c.mu.ring) {
		c.mu.hand = 0
	}
}
