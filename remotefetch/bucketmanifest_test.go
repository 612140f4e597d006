package remotefetch

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// The bucket manifest decoder reads what offload publishes and refuses
// what it must not read.
func TestDecodeBucketManifest(t *testing.T) {
	t.Parallel()
	p := buildPartition(t, "t", 1, []int{3, 3}, segmentSpec{})
	good := string(p.manifest.Encode())
	m, err := decodeBucketManifest([]byte(good), p.part)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, p.manifest) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", m, p.manifest)
	}
	id := p.part.TopicID.String()
	other := p.part
	other.TopicID = uuid.New()
	bad := map[string]string{
		"version":         strings.Replace(good, `"version":1`, `"version":2`, 1),
		"other partition": strings.Replace(good, `"partition":1`, `"partition":2`, 1),
		"other topic":     strings.Replace(good, `"topic":"t"`, `"topic":"u"`, 1),
		"other topic id":  strings.Replace(good, `"topic_id":"`+id, `"topic_id":"`+other.TopicID.String(), 1),
		"not json":        good[:len(good)/2],
		"overlap":         strings.Replace(good, `"end_offset":`, `"end_offset":1000`, 1),
	}
	for name, data := range bad {
		if data == good {
			t.Fatalf("%s: the replacement changed nothing", name)
		}
		if _, err := decodeBucketManifest([]byte(data), p.part); !errors.Is(err, ErrInvalidManifest) {
			t.Errorf("%s: %v, want ErrInvalidManifest", name, err)
		}
	}
	if _, err := decodeBucketManifest([]byte(good), other); !errors.Is(err, errOtherPartition) {
		t.Errorf("another incarnation's manifest: %v, want errOtherPartition", err)
	}
}
