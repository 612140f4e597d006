package ingest

import (
	"context"

	"github.com/stratalog/strata/group"
)

// GroupState is a consumer group's state as this broker's coordinator
// describes it: Dead for a group with neither members here nor committed
// offsets, as Kafka reports an unknown group.
func (b *Broker) GroupState(ctx context.Context, groupID string) (group.State, error) {
	described, err := b.groups.Describe(ctx, []string{groupID})
	if err != nil {
		return "", err
	}
	return described[0].State, nil
}
