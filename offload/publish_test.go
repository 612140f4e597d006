package offload

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stratalog/strata/segmentobject"
)

// TestAFailedPublishDoesNotStopUploads: a manifest.json PUT that fails
// after a commit leaves the segment committed, and the pass goes on to
// the next segment (before, it ended with the error and backed off, up to
// a minute a segment while publishing failed); the expiry pass publishes
// the manifest once the bucket takes it again.
func TestAFailedPublishDoesNotStopUploads(t *testing.T) {
	h := newHarness(t, harnessOptions{tweak: func(c *Config) { c.MaxAttempts = 1 }})
	h.store.setFailPut(func(_ context.Context, key string) error {
		if strings.HasSuffix(key, segmentobject.ManifestName) {
			return errors.New("manifest.json refused (test)")
		}
		return nil
	})
	h.segments(2)
	p := h.mgr.partitions()[0]
	uploaded, err := h.mgr.copyPass(t.Context(), p, -1)
	if uploaded != 2 || err != nil {
		t.Fatalf("copy pass with manifest.json refused: %d uploaded, %v; want 2 and no error", uploaded, err)
	}
	h.store.setFailPut(nil)
	h.mustSync()
	h.checkConsistent()
}

// TestAMissingObjectDoesNotStopExpiry: a committed segment's object is
// gone from the bucket (deleted outside strata) and the manifest.json
// that recorded its tail size with it, so publishing cannot learn it.
// The bucket manifest leaves that segment out, loudly, and the expiry
// pass's deletes go on (before, every publish failed, and with it every
// delete: the bucket kept whatever retention let go, for good).
func TestAMissingObjectDoesNotStopExpiry(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.segments(3)
	h.mustSync()
	committed := h.committed()
	if len(committed) != 3 {
		t.Fatalf("committed %+v, want three segments", committed)
	}
	ctx := t.Context()
	for _, key := range []string{committed[1].ObjectKey, h.prefix() + segmentobject.ManifestName} {
		if err := h.store.Store.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	h.startManager(nil) // forgets the tail sizes it learned uploading
	h.moveRemoteLogStart(committed[0].EndOffset + 1)
	h.segments(1)
	h.mustSync()

	if got := keys(t, h.store.Store); slices.Contains(got, committed[0].ObjectKey) {
		t.Fatalf("the object of the segment below the remote log start is still in the bucket: %q", got)
	}
	var ids []string
	for _, s := range h.committed() {
		ids = append(ids, s.ID.String())
	}
	if len(ids) != 3 || ids[0] != committed[1].ID.String() || ids[1] != committed[2].ID.String() {
		t.Fatalf("committed %q after the expiry, want the two segments after the first and the new one", ids)
	}
	bm := h.bucketManifest()
	if len(bm.Segments) != 2 || bm.Segments[0].ID != committed[2].ID {
		t.Fatalf("bucket manifest %+v, want the two segments whose objects exist", bm.Segments)
	}
	if !strings.Contains(h.logged(), "object is missing or damaged") {
		t.Fatalf("the missing object was not logged:\n%s", h.logged())
	}
}
