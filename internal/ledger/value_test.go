package ledger

import (
	"bytes"
	"testing"
)

func TestValueRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		producer string
		seq      int64
	}{
		{"producer-0", 0},
		{"p", 9223372036854775807},
		{"has:colons:", 12},
		{"spaces and ünïcode", 3},
	} {
		v := Value(tc.producer, tc.seq)
		producer, seq, ok := ParseValue(v)
		if !ok || producer != tc.producer || seq != tc.seq {
			t.Errorf("ParseValue(%q) = %q, %d, %v; want %q, %d, true", v, producer, seq, ok, tc.producer, tc.seq)
		}
	}
}

func TestParseValueRejects(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		"",
		"ledger:",
		"ledger::1",                     // no producer
		"ledger:p",                      // no sequence number
		"ledger:p:",                     // empty sequence number
		"ledger:p:-1",                   // negative
		"ledger:p:+1",                   // not as Value writes it
		"ledger:p:01",                   // leading zero
		"ledger:p:1x",                   // not a number
		"Ledger:p:1",                    // another prefix
		"p:1",                           // no prefix
		"ledger:p:99999999999999999999", // out of range
	} {
		if producer, seq, ok := ParseValue([]byte(v)); ok {
			t.Errorf("ParseValue(%q) = %q, %d, true; want false", v, producer, seq)
		}
	}
}

// FuzzParseValue checks that ParseValue accepts exactly Value's output:
// what it accepts, Value writes back byte for byte.
func FuzzParseValue(f *testing.F) {
	f.Add([]byte("ledger:producer-0:17"))
	f.Add([]byte("ledger:a:b:0"))
	f.Add([]byte("ledger:p:007"))
	f.Fuzz(func(t *testing.T, v []byte) {
		producer, seq, ok := ParseValue(v)
		if ok && !bytes.Equal(Value(producer, seq), v) {
			t.Fatalf("ParseValue(%q) = %q, %d, which Value writes as %q", v, producer, seq, Value(producer, seq))
		}
	})
}
