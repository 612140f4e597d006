//go:build race

package hotlog

// raceDetector is whether the race detector is built in: its shadow
// memory multiplies the resident set, so resident figures mean nothing.
const raceDetector = true
