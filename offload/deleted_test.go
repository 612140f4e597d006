package offload

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/segmentobject"
)

// TestTheObjectsOfADeletedTopicAreDeleted: a deleted topic's segment
// objects and bucket manifest leave the bucket at the next sweep of the
// broker with the lowest live id (before, they stayed for good); the
// objects of live topics, and keys not of strata's layout, stay. A bucket
// prefix that names another cluster is left alone.
func TestTheObjectsOfADeletedTopicAreDeleted(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.segments(2)
	h.mustSync()
	ctx := t.Context()
	live := createTopic(t, h.meta, nil)
	kept := []string{
		segmentobject.ManifestKey("", live.Name, live.ID, 0),
		"backups/readme.txt",
		"t9-not-a-topic-id/0/manifest.json",
		h.prefix() + "operator-notes.txt", // not an object strata writes
	}
	for _, key := range kept {
		if err := h.store.Put(ctx, key, bytes.NewReader([]byte("x")), 1); err != nil {
			t.Fatal(err)
		}
	}
	sweep := func(want int) {
		t.Helper()
		if n, err := h.mgr.sweepDeletedTopics(ctx); err != nil || n != want {
			t.Fatalf("sweep of deleted topics deleted %d objects (%v), want %d", n, err, want)
		}
	}
	sweep(0)
	if _, err := h.meta.Propose(ctx, meta.DeleteTopic{Name: h.topic.Name, ID: h.topic.ID}); err != nil {
		t.Fatal(err)
	}
	h.cfg.BrokerID = brokerID + 1 // not the lowest live id: another broker sweeps
	h.startManager(nil)
	sweep(0)
	h.cfg.BrokerID = brokerID
	h.startManager(nil)
	// A prefix another cluster claimed holds topics this one does not
	// know: nothing is deleted.
	if err := h.store.Put(ctx, clusterIDName, bytes.NewReader([]byte("another")), 7); err != nil {
		t.Fatal(err)
	}
	if n, err := h.mgr.sweepDeletedTopics(ctx); err == nil || n != 0 || !strings.Contains(err.Error(), "another cluster's objects") {
		t.Fatalf("sweep of a prefix another cluster claimed: %d deleted, %v; want none and the refusal", n, err)
	}
	if err := h.store.Delete(ctx, clusterIDName); err != nil {
		t.Fatal(err)
	}
	sweep(3) // two segments and manifest.json; the prefix is claimed
	kept = append(kept, clusterIDName)
	got := keys(t, h.store.Store)
	slices.Sort(kept)
	if !slices.Equal(got, kept) {
		t.Fatalf("bucket holds %q after the sweep, want %q", got, kept)
	}
}
