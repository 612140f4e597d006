package remotefetch

import (
	"testing"

	"github.com/stratalog/strata/segmentobject"
)

// The index cache keeps the most recently used indexes within its byte
// budget.
func TestIndexCacheLRU(t *testing.T) {
	t.Parallel()
	p := buildPartition(t, "lru", 0, []int{5, 5, 5}, segmentSpec{})
	var indexes []*segmentobject.Index
	for _, s := range p.segments {
		indexes = append(indexes, mustIndex(t, s))
	}
	cost := indexes[0].Footer.TailSize()
	c := newIndexCache(2*cost+cost/2, newLifecycle())
	c.add("a", indexes[0])
	c.add("b", indexes[1])
	if _, ok := c.lookup("a"); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	c.add("c", indexes[2])
	if _, ok := c.lookup("b"); ok {
		t.Fatal("b, the least recently used, was kept past the budget")
	}
	for _, key := range []string{"a", "c"} {
		if _, ok := c.lookup(key); !ok {
			t.Fatalf("%s evicted, want it kept", key)
		}
	}
	if m := c.Metrics(); m.Evictions != 1 || m.Size != 2*cost || m.Capacity != 2*cost+cost/2 {
		t.Fatalf("metrics %+v, want one eviction and two indexes' bytes", m)
	}
	tiny := newIndexCache(cost-1, newLifecycle())
	tiny.add("a", indexes[0])
	if _, ok := tiny.lookup("a"); ok {
		t.Fatal("an index larger than the whole budget was kept")
	}
}
