package replica

import (
	"testing"

	"github.com/stratalog/strata/hotlog"
)

// TestBytesAfter: whole segments after the offset count in full, the one
// holding it by the share of its offsets that follow.
func TestBytesAfter(t *testing.T) {
	segments := []hotlog.SegmentInfo{
		{BaseOffset: 0, NextOffset: 100, Size: 1000},
		{BaseOffset: 100, NextOffset: 200, Size: 2000},
		{BaseOffset: 200, NextOffset: 210, Size: 500},
	}
	for _, c := range []struct {
		offset, want int64
	}{
		{0, 3500}, {50, 3000}, {100, 2500}, {150, 1500}, {200, 500}, {205, 250}, {210, 0},
	} {
		if got := bytesAfter(segments, c.offset); got != c.want {
			t.Errorf("bytesAfter(%d) = %d, want %d", c.offset, got, c.want)
		}
	}
}
