package replica

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
)

// TestPartitionDirAfterACrashInItsPreparation: a crash inside
// preparePartitionDir leaves at worst an empty metadata file (a release
// that wrote it in place) or a temporary one; the next preparation takes
// the directory as new and writes the file whole.
func TestPartitionDirAfterACrashInItsPreparation(t *testing.T) {
	t.Parallel()
	id := uuid.New()
	for name, leftovers := range map[string]map[string][]byte{
		"empty metadata": {partitionMetadataFile: nil},
		"temporary only": {partitionMetadataFile + ".tmp": []byte("topic_id: half")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "topic-0")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for file, data := range leftovers {
				if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := preparePartitionDir(dir, id); err != nil {
				t.Fatal(err)
			}
			if got, ok, err := readPartitionTopicID(dir); !ok || err != nil || got != encodeTopicID(id) {
				t.Fatalf("topic id %q (%v, %v), want %q", got, ok, err, encodeTopicID(id))
			}
			if _, err := os.Stat(filepath.Join(dir, partitionMetadataFile+".tmp")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a temporary file is left: %v", err)
			}
		})
	}
}

// TestWriteFileSyncedIsWholeOrNothing: a write that fails leaves the file
// as it was, never cut short.
func TestWriteFileSyncedIsWholeOrNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, partitionMetadataFile)
	if err := writeFileSynced(path, []byte("topic_id: before\n")); err != nil {
		t.Fatal(err)
	}
	// A directory where the temporary file goes makes the write fail.
	if err := os.Mkdir(path+".tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeFileSynced(path, []byte("topic_id: after\n")); err == nil {
		t.Fatal("the write succeeded with its temporary file blocked")
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "topic_id: before\n" {
		t.Fatalf("after a failed write the file holds %q (%v), want it as it was", got, err)
	}
}

// TestPurgeMarkerNames: a purge marker's name gives back the partition
// and topic id it was made of, topic names with '.' and '-' included;
// other files of the data directory are not markers.
func TestPurgeMarkerNames(t *testing.T) {
	id := uuid.New()
	for _, topic := range []string{"t", "a.b-c", "x-1", "..."} {
		name := purgeMarkerName(topic, 12, id)
		gotTopic, gotIndex, gotID, ok := parsePurgeMarker(name)
		if !ok || gotTopic != topic || gotIndex != 12 || gotID != id {
			t.Errorf("%q: parsed %q %d %v %v, want %q 12 %v", name, gotTopic, gotIndex, gotID, ok, topic, id)
		}
	}
	for _, name := range []string{"meta.lock", "t-0.purge", "t-0." + encodeTopicID(id), "t." + encodeTopicID(id) + ".purge", ".purge"} {
		if _, _, _, ok := parsePurgeMarker(name); ok {
			t.Errorf("%q taken for a purge marker", name)
		}
	}
}
