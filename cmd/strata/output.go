package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// table prints aligned columns, header first.
type table struct {
	w *tabwriter.Writer
}

func newTable(out io.Writer, header ...string) *table {
	t := &table{w: tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)}
	t.row(toAny(header)...)
	return t
}

func (t *table) row(cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = fmt.Sprint(c)
	}
	fmt.Fprintln(t.w, strings.Join(parts, "\t"))
}

func (t *table) flush() error { return t.w.Flush() }

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// printJSON writes v as indented JSON followed by a newline.
func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// topicID prints a topic id the way Kafka's tools do: URL-safe base64
// without padding.
func topicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// ids prints broker ids as a comma-separated list, "-" for none.
func ids(v []int32) string {
	s := ""
	for i, id := range v {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(id)
	}
	if s == "" {
		return "-"
	}
	return s
}

// orEmpty keeps a list that Metadata left out as [] in JSON, not null.
func orEmpty(v []int32) []int32 {
	if v == nil {
		return []int32{}
	}
	return v
}
