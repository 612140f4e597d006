package ledger

import (
	"bytes"
	"strconv"
)

// valuePrefix starts every value Value makes, so that a record from
// anywhere else is never mistaken for one.
const valuePrefix = "ledger:"

// Value is the record value for producer's seq-th record:
// "ledger:<producer>:<seq>", with seq in decimal. producer must be non-empty
// (it may hold any bytes, colons included) and seq must not be negative.
func Value(producer string, seq int64) []byte {
	return strconv.AppendInt([]byte(valuePrefix+producer+":"), seq, 10)
}

// ParseValue reads the producer and sequence number out of a value Value
// made. ok is false for any other bytes, including a sequence number
// written in any way but Value's (a sign, leading zeros), so that one
// producer and seq have exactly one value.
func ParseValue(v []byte) (producer string, seq int64, ok bool) {
	rest, found := bytes.CutPrefix(v, []byte(valuePrefix))
	colon := bytes.LastIndexByte(rest, ':')
	if !found || colon < 1 {
		return "", 0, false
	}
	digits := string(rest[colon+1:])
	seq, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || seq < 0 || strconv.FormatInt(seq, 10) != digits {
		return "", 0, false
	}
	return string(rest[:colon]), seq, true
}
