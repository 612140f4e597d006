package ingest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSessions sends the session ids and epochs a client may send
// (KIP-227) and checks the broker, which holds no sessions, answers as
// Kafka's FetchManager.newContext would: epochs 0 and -1 are full fetches,
// answered in full with session id 0 whatever session they name; any other
// epoch continues a session the broker does not have, so it is
// FETCH_SESSION_ID_NOT_FOUND with no partitions. It runs at v7, the first
// version with sessions, and at the highest advertised Fetch version.
func TestFetchSessions(t *testing.T) {
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "fetch-sessions"}
	topic := h.topic(1, nil)
	batch := h.produce(topic, 3)

	cases := []struct {
		name      string
		sessionID int32
		epoch     int32
		want      *kerr.Error // nil: a full answer
	}{
		{"no session, initial epoch (asks for a session)", 0, 0, nil},
		{"no session, final epoch (sessionless)", 0, -1, nil},
		{"unknown session, initial epoch (close it, start anew)", 12345, 0, nil},
		{"unknown session, final epoch (close it)", 12345, -1, nil},
		{"unknown session, next epoch", 12345, 1, kerr.FetchSessionIDNotFound},
		{"unknown session, later epoch", 12345, 7, kerr.FetchSessionIDNotFound},
		{"no session, next epoch", 0, 1, kerr.FetchSessionIDNotFound},
		{"no session, epoch below final", 0, -2, kerr.FetchSessionIDNotFound},
	}
	for _, version := range []int16{7, apis[fetchKey].maxVersion} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("v%d/%s", version, tc.name), func(t *testing.T) {
				req := fetchFromStart(topic, 1<<20)
				req.SessionID, req.SessionEpoch = tc.sessionID, tc.epoch
				resp := connect(t, b).request(req, version).(*kmsg.FetchResponse)
				wantCode(t, "top-level error", resp.ErrorCode, tc.want)
				if resp.SessionID != 0 {
					t.Fatalf("session id %d: the broker declines sessions, want 0", resp.SessionID)
				}
				if tc.want != nil {
					if len(resp.Topics) != 0 {
						t.Fatalf("a session error answered %d topics, want none", len(resp.Topics))
					}
					return
				}
				if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
					t.Fatalf("a full fetch answered %+v", resp.Topics)
				}
				p := resp.Topics[0].Partitions[0]
				wantCode(t, "partition", p.ErrorCode, nil)
				if p.HighWatermark != 3 || !bytes.Equal(p.RecordBatches, batch) {
					t.Fatalf("a full fetch: high watermark %d, %d record bytes, want 3 and %d", p.HighWatermark, len(p.RecordBatches), len(batch))
				}
			})
		}
	}
}
