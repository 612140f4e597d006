package offload

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/stratalog/strata/meta"
)

// TestPurgeDeletesADeletedTopicsObjects: a deleted topic's partition is
// purged: its segment objects and bucket manifest leave the bucket (before,
// nothing ever deleted them). Keys under its prefix that strata does not
// write stay, as does every other partition's prefix.
func TestPurgeDeletesADeletedTopicsObjects(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.segments(2)
	h.mustSync()
	ctx := t.Context()
	kept := []string{h.prefix() + "operator-notes.txt", h.prefix()[:len(h.prefix())-2] + "1/manifest.json"}
	for _, key := range kept {
		if err := h.store.Put(ctx, key, bytes.NewReader([]byte("x")), 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.meta.Propose(ctx, meta.DeleteTopic{Name: h.topic.Name, ID: h.topic.ID}); err != nil {
		t.Fatal(err)
	}
	h.mgr.Remove(h.topic.Name, 0)
	h.mgr.Purge(h.topic.Name, h.topic.ID, 0)
	slices.Sort(kept)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got := keys(t, h.store.Store)
		if slices.Equal(got, kept) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bucket holds %q 30 s after the purge, want %q", got, kept)
		}
	}
}
