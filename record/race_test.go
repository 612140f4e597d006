//go:build race

package record

// raceEnabled is whether the race detector is on: it makes sync.Pool drop
// items at random, so exact allocation counts mean nothing then.
const raceEnabled = true
