package ingest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// The README lists the Kafka APIs the broker serves between these markers.
const (
	readmeAPIsBegin = "<!-- apis:begin (checked by ingest.TestReadmeListsServedAPIs) -->\n"
	readmeAPIsEnd   = "<!-- apis:end -->\n"
)

// TestReadmeListsServedAPIs keeps the README's table of Kafka APIs equal to
// the dispatch table, so what users read is what the broker answers.
func TestReadmeListsServedAPIs(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), readmeAPIsBegin)
	if !ok {
		t.Fatalf("README.md has no line %q", strings.TrimSpace(readmeAPIsBegin))
	}
	table, _, ok := strings.Cut(rest, readmeAPIsEnd)
	if !ok {
		t.Fatalf("README.md has no line %q after the table", strings.TrimSpace(readmeAPIsEnd))
	}
	if want := servedAPIsTable(); table != want {
		t.Errorf("README.md's table of Kafka APIs differs from the dispatch table; between the markers it should read:\n%s", want)
	}
}

// servedAPIsTable renders the dispatch table as the README shows it.
func servedAPIsTable() string {
	var b strings.Builder
	b.WriteString("| key | API | versions |\n|---:|---|---|\n")
	for _, a := range supportedAPIs() {
		fmt.Fprintf(&b, "| %d | %s | %d–%d |\n", a.key, a.name, a.minVersion, a.maxVersion)
	}
	return b.String()
}
