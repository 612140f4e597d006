package ingest

import (
	"context"

	"github.com/stratalog/strata/group"
)

// GroupLag is a consumer group's lag in every partition it committed an
// offset for or assigned to a member, as this broker's coordinator sees it.
func (b *Broker) GroupLag(ctx context.Context, groupID string) ([]group.PartitionLag, error) {
	return b.groups.Lag(ctx, groupID)
}
