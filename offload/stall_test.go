package offload

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
)

// An upload the store refuses for good (a key it will not take, as a file
// system whose names are shorter than 255 bytes answers ENAMETOOLONG) is
// stalled at its first failure, long before the stall alarm, with the
// store's error; it is logged once, retried all the same, and the alarm
// clears once an upload commits.
func TestRefusedUploadStallsAtOnce(t *testing.T) {
	for _, refusal := range []error{
		fmt.Errorf("%w: injected refusal", objstore.ErrInvalidKey),
		fmt.Errorf("objstore: put: %w", syscall.ENAMETOOLONG),
	} {
		t.Run(refusal.Error(), func(t *testing.T) {
			h := newHarness(t, harnessOptions{})
			h.segments(1)
			h.store.setFailPut(func(context.Context, string) error { return refusal })
			if err := h.sync(); err == nil {
				t.Fatal("Sync succeeded with refused PUTs")
			}
			st := h.mgr.Status().Partitions[0]
			if !st.Stalled || st.FailedAttempts != 1 || st.UploadWait != 0 || !strings.Contains(st.StallReason, "refuses") || !strings.Contains(st.LastError, refusal.Error()) {
				t.Fatalf("status after one refused PUT: %+v", st)
			}
			if err := h.sync(); err == nil {
				t.Fatal("Sync succeeded with refused PUTs")
			}
			if n := strings.Count(h.logged(), "upload stalled"); n != 1 {
				t.Fatalf("%d stall logs, want 1:\n%s", n, h.logged())
			}
			if st := h.mgr.Status().Partitions[0]; st.FailedAttempts != 2 {
				t.Fatalf("the refused upload was not retried: %+v", st)
			}
			h.store.setFailPut(nil)
			h.mustSync()
			if st := h.mgr.Status().Partitions[0]; st.Stalled || st.FailedAttempts != 0 || st.LastError != "" || st.StallReason != "" {
				t.Fatalf("status after the upload: %+v", st)
			}
			h.checkConsistent()
		})
	}
}

// A PUT that S3 answers with 403 AccessDenied every time (a bucket policy
// that will not change by itself) is stalled after StallAttempts failed
// attempts across passes, on no clock at all, and not before.
func TestFailingUploadStallsAfterAttempts(t *testing.T) {
	h, proxy := faultHarness(t, 0, true)
	h.cfg.MaxAttempts, h.cfg.StallAttempts = 1, 3
	h.startManager(nil)
	h.segments(1)
	proxy.Add(objstoretest.All(objstoretest.Method(http.MethodPut), objstoretest.PathContains(".seg")), objstoretest.Status(http.StatusForbidden), 0)
	for attempt := 1; attempt <= h.cfg.StallAttempts; attempt++ {
		if err := h.sync(); err == nil {
			t.Fatal("Sync succeeded with every PUT refused")
		}
		st := h.mgr.Status().Partitions[0]
		if st.FailedAttempts != attempt || st.Stalled != (attempt == h.cfg.StallAttempts) || !strings.Contains(st.LastError, "AccessDenied") {
			t.Fatalf("after %d failed PUTs: %+v", attempt, st)
		}
	}
	if st := h.mgr.Status().Partitions[0]; st.StallReason != "3 failed attempts" || st.UploadWait != 0 {
		t.Fatalf("stalled status %+v", st)
	}
	proxy.Clear()
	h.mustSync()
	if st := h.mgr.Status().Partitions[0]; st.Stalled || st.FailedAttempts != 0 {
		t.Fatalf("status after the upload: %+v", st)
	}
	h.checkConsistent()
}
