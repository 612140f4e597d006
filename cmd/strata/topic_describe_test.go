package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestDescribeShowsReplication prints a described topic: the partition
// table gains OFFLINE after ISR, and the local and tiered sizes at the
// end, and keeps its other columns; the JSON keeps its fields and gains
// offline_replicas, local_bytes and tiered_bytes.
func TestDescribeShowsReplication(t *testing.T) {
	t.Parallel()
	topic := fabricatedMetadata().Topics["orders"]
	ends := kadm.ListedOffsets{"orders": {1: {Topic: "orders", Partition: 1, Offset: 42}}}
	d := []describedTopic{{Topic: "orders", ID: "AAAAAAAAAAAAAAAAAAAAAA", Partitions: describePartitions(topic, kadm.ListedOffsets{}, ends)}}
	d[0].Partitions[1].LocalBytes, d[0].Partitions[1].TieredBytes = 3<<20, 5<<30
	var out bytes.Buffer
	if err := printDescribed(&out, d); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if lines[2] != "PARTITION  LEADER  EPOCH  REPLICAS  ISR    OFFLINE  LOG-START  HIGH-WATERMARK  LOCAL    TIERED" ||
		lines[4] != "1          2       7      2,3,1     2,1    3        -1         42              3.0 MiB  5.00 GiB" ||
		lines[3] != "0          1       4      1,2,3     1,2,3  -        -1         -1              -        -" {
		t.Errorf("describe table:\n%s", out.String())
	}
	out.Reset()
	printJSON(&out, d)
	var decoded []struct {
		Partitions []map[string]any `json:"partitions"`
	}
	if err := json.Unmarshal(out.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"partition", "leader", "leader_epoch", "replicas", "isr", "offline_replicas", "log_start_offset", "high_watermark", "local_bytes", "tiered_bytes"} {
		if _, ok := decoded[0].Partitions[1][field]; !ok {
			t.Errorf("describe JSON has no %q: %s", field, out.String())
		}
	}
}
