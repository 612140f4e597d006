package main

import (
	"errors"
	"math"
	"strings"

	"github.com/stratalog/strata/meta"
)

// The CLI checks what it can before it sends a request, so that a bad
// value is named as the user typed it: a number that does not fit the
// Kafka field it goes into (an int32 partition count, an int16
// replication factor) would otherwise be truncated on the wire and mean
// something else ("--partitions 4294967297" would ask for 1).

// checkTopicName refuses a topic name Kafka refuses (meta.TopicNameProblem
// has the rule). what names where the name came from ("topic",
// "--topic").
func checkTopicName(what, name string) error {
	const rules = "topic names are 1 to 249 ASCII letters, digits, '.', '_' and '-', and not \".\" or \"..\"; `strata topic list` shows the topics"
	if problem := meta.TopicNameProblem(name); problem != "" {
		return withFix(usageError("%s", strings.Replace(problem, "topic name", what+" name", 1)), rules)
	}
	return nil
}

// checkTopicNames is checkTopicName for each of names.
func checkTopicNames(what string, names []string) error {
	for _, name := range names {
		if err := checkTopicName(what, name); err != nil {
			return err
		}
	}
	return nil
}

// int32Flag converts a flag's value for an int32 Kafka field, refusing one
// that does not fit rather than letting it wrap.
func int32Flag(name string, v int) (int32, error) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, usageError("--%s %d is out of range: Kafka carries it as a 32-bit integer, at most %d", name, v, math.MaxInt32)
	}
	return int32(v), nil
}

// int16Flag is int32Flag for an int16 Kafka field.
func int16Flag(name string, v int) (int16, error) {
	if v < math.MinInt16 || v > math.MaxInt16 {
		return 0, usageError("--%s %d is out of range: Kafka carries it as a 16-bit integer, at most %d", name, v, math.MaxInt16)
	}
	return int16(v), nil
}

// partitionFlag checks a --partition flag: -1 for "any" when allowed,
// else a partition number that fits Kafka's int32.
func partitionFlag(v int, anyAllowed bool) (int32, error) {
	p, err := int32Flag("partition", v)
	switch {
	case err != nil:
		return 0, err
	case p == -1 && anyAllowed:
		return p, nil
	case p < 0 && anyAllowed:
		return 0, usageError("--partition %d: give a partition number, 0 or more, or -1 for all", v)
	case p < 0:
		return 0, usageError("--partition %d: give a partition number, 0 or more", v)
	}
	return p, nil
}

// fixedError is an error with the fix for it, when the fix depends on what
// was asked and not only on the error code (explainParts prefers it to
// the fixes table).
type fixedError struct {
	err error
	fix string
}

func withFix(err error, fix string) error { return &fixedError{err: err, fix: fix} }

func (e *fixedError) Error() string { return e.err.Error() }
func (e *fixedError) Unwrap() error { return e.err }

// fixOf returns the fix a fixedError in err's chain carries.
func fixOf(err error) (string, bool) {
	var f *fixedError
	if errors.As(err, &f) {
		return f.fix, true
	}
	return "", false
}
