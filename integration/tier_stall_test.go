package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/objstore/objstoretest"
	"github.com/stratalog/strata/offload"
)

// TestTierStatusReportsFailingUpload answers every segment PUT of a real
// server with 403 AccessDenied (a bucket policy that no retry changes) and
// checks that the admin endpoint and `strata tier status` report the
// partition stalled once its upload has failed offload's StallAttempts
// times, with the store's error, long before the ten-minute stall alarm;
// then that the alarm clears once the bucket takes the upload.
func TestTierStatusReportsFailingUpload(t *testing.T) {
	t.Parallel()
	tb := startFaultyTieringServer(t)
	s := tb.server
	const topic = "refused"
	tb.createTopic(t, topic, 2<<20)
	refused := tb.proxy.Add(segmentUpload, objstoretest.Status(http.StatusForbidden), 0)
	produceAll(t, newClient(t, s, kgo.ProducerLinger(5*time.Millisecond)), topic, tierRecords(2<<20))

	attempts := offload.DefaultConfig().StallAttempts
	var st offload.PartitionStatus
	pollUntil(t, s, 5*time.Minute, "the refused upload reported stalled", func() (bool, string) {
		st, _ = tierPartition(s, topic, 0)
		return st.Stalled, fmt.Sprintf("status %+v; PUTs refused %d", st, refused.Hits())
	})
	if st.FailedAttempts < attempts || st.StallReason != fmt.Sprintf("%d failed attempts", st.FailedAttempts) || !strings.Contains(st.LastError, "AccessDenied") || st.UploadWait >= offload.DefaultConfig().StallAlarm {
		t.Fatalf("stalled status %+v: want %d or more failed attempts, the store's AccessDenied, and no ten-minute wait", st, attempts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	table, err := s.strata(ctx, "", "tier", "status", topic)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "(STALLED: ") || !strings.Contains(table, "failed attempts)") || !strings.Contains(table, "AccessDenied") {
		t.Fatalf("strata tier status does not show the stall and its error:\n%s", table)
	}

	tb.proxy.Clear()
	cl := newClient(t, s)
	pollUntil(t, s, 2*time.Minute, "the upload committed and the alarm cleared", func() (bool, string) {
		st, _ = tierPartition(s, topic, 0)
		return !st.Stalled && st.HighestTieredOffset >= 0 && listOffset(t, cl, topic, -5) >= 0, fmt.Sprintf("status %+v", st)
	})
}
