package main

import (
	"context"
	"net/url"
	"strings"

	"github.com/stratalog/strata/group"
)

// groupLagPath is the admin endpoint with a group's lag.
const groupLagPath = "/v1/groups/{group}/lag"

// partitionLag is one partition of the lag document the admin server
// returns at groupLagPath and `strata group describe` reads. A committed
// offset of -1 is a partition assigned to a member but never committed;
// its lag counts from the log start.
type partitionLag struct {
	Topic           string `json:"topic"`
	Partition       int32  `json:"partition"`
	CommittedOffset int64  `json:"committed_offset"`
	HighWatermark   int64  `json:"high_watermark"`
	LagRecords      int64  `json:"lag_records"`
	LagMs           int64  `json:"lag_ms"`
	Member          string `json:"member,omitempty"`
	Stalled         bool   `json:"stalled"`
	StalledForMs    int64  `json:"stalled_for_ms,omitempty"`
	Error           string `json:"error,omitempty"`
}

// lagDocument converts the coordinator's lag to the document.
func lagDocument(lags []group.PartitionLag) []partitionLag {
	out := make([]partitionLag, len(lags))
	for i, l := range lags {
		out[i] = partitionLag{
			Topic: l.Topic, Partition: l.Partition, CommittedOffset: l.CommittedOffset, HighWatermark: l.HighWatermark,
			LagRecords: l.Records, LagMs: l.Age.Milliseconds(), Member: l.Member, Stalled: l.Stalled, StalledForMs: l.StalledFor.Milliseconds(),
		}
		if l.Err != nil {
			out[i].Error = l.Err.Error()
		}
	}
	return out
}

// fetchGroupLag asks a server's admin address for a group's lag.
func fetchGroupLag(ctx context.Context, admin *adminClient, groupID string) ([]partitionLag, error) {
	var out []partitionLag
	path := strings.Replace(groupLagPath, "{group}", url.PathEscape(groupID), 1)
	if err := admin.getJSON(ctx, path, "lag", &out); err != nil {
		return nil, err
	}
	return out, nil
}
