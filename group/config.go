package group

import (
	"errors"
	"fmt"
	"time"
)

// Config is the coordinator's configuration. Names in comments are Kafka's
// broker settings with the same meaning.
type Config struct {
	// InitialRebalanceDelay is how long the first rebalance of an empty
	// group waits for more members (group.initial.rebalance.delay.ms). Kafka's
	// default is 3 s; tests use 0.
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// member may ask for (group.min.session.timeout.ms,
	// group.max.session.timeout.ms).
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// StallThreshold is how long a partition of a group with live members
	// may keep lag while its committed offset does not move before it is
	// reported stalled (a "ghost consumer").
	StallThreshold time.Duration
	// CommitTimeout bounds one offset commit through the metadata group.
	CommitTimeout time.Duration
	// OffsetsRetention is how long a group's committed offsets outlive its
	// last member (offsets.retention.minutes; retention.go has the rules).
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is how often expired offsets are
	// looked for (offsets.retention.check.interval.ms).
	OffsetsRetentionCheckInterval time.Duration
}

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		InitialRebalanceDelay: 3 * time.Second,
		MinSessionTimeout:     6 * time.Second,
		MaxSessionTimeout:     30 * time.Minute,
		StallThreshold:        5 * time.Minute,
		CommitTimeout:         30 * time.Second,

		OffsetsRetention:              7 * 24 * time.Hour,
		OffsetsRetentionCheckInterval: 10 * time.Minute,
	}
}

// Validate reports the first setting out of range.
func (c Config) Validate() error {
	switch {
	case c.InitialRebalanceDelay < 0:
		return errors.New("initial rebalance delay must not be negative")
	case c.MinSessionTimeout <= 0 || c.MaxSessionTimeout < c.MinSessionTimeout:
		return fmt.Errorf("session timeout bounds %v..%v: need 0 < min <= max", c.MinSessionTimeout, c.MaxSessionTimeout)
	case c.StallThreshold <= 0:
		return errors.New("stall threshold must be positive")
	case c.CommitTimeout <= 0:
		return errors.New("commit timeout must be positive")
	case c.OffsetsRetention < time.Minute:
		return fmt.Errorf("offsets.retention.minutes %g: want at least 1", c.OffsetsRetention.Minutes())
	case c.OffsetsRetentionCheckInterval < time.Millisecond:
		return fmt.Errorf("offsets.retention.check.interval.ms %d: want at least 1", c.OffsetsRetentionCheckInterval.Milliseconds())
	}
	return nil
}
