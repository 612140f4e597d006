package ingest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stratalog/strata/meta"
)

// Messages on the wire read as sentences for people: no Go package name
// before them, the rest as the error says it.
func TestErrorMessageLeavesOutPackageNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: replication factor 3", ErrInvalidReplicationFactor), "invalid replication factor: replication factor 3"},
		{fmt.Errorf("%w: Topic 'a_b' collides with existing topic: a.b", meta.ErrInvalidTopicName), "invalid topic name: Topic 'a_b' collides with existing topic: a.b"},
		{errors.New("io: read past the end"), "io: read past the end"},
	} {
		if got := errorMessage(tc.err); got == nil || *got != tc.want {
			t.Errorf("errorMessage(%v) = %v, want %q", tc.err, got, tc.want)
		}
	}
	if errorMessage(nil) != nil {
		t.Error("errorMessage(nil) is not nil")
	}
}
