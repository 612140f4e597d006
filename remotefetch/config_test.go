package remotefetch

import (
	"errors"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	if err := ScanConfig().Validate(); err != nil {
		t.Fatalf("ScanConfig: %v", err)
	}
	cases := map[string]func(*Config){
		"block size too small":  func(c *Config) { c.BlockSize = 512 },
		"block size too large":  func(c *Config) { c.BlockSize = 128 << 20 },
		"cache below a block":   func(c *Config) { c.BlockCacheBytes = c.BlockSize - 1 },
		"negative index cache":  func(c *Config) { c.IndexCacheBytes = -1 },
		"tail guess below foot": func(c *Config) { c.IndexTailGuess = 100 },
		"negative read-ahead":   func(c *Config) { c.ReadAheadBlocks = -1 },
		"negative budget":       func(c *Config) { c.ReadAheadBytes = -1 },
		"no streams":            func(c *Config) { c.MaxStreams = 0 },
		"no gets":               func(c *Config) { c.MaxConcurrentGets = 0 },
		"no timeout":            func(c *Config) { c.AttemptTimeout = 0 },
		"no attempts":           func(c *Config) { c.MaxAttempts = 0 },
		"backoff above max":     func(c *Config) { c.RetryBackoff = 2 * c.RetryBackoffMax },
		"no fetch wait":         func(c *Config) { c.FetchMaxWait = 0 },
		"no fetch concurrency":  func(c *Config) { c.FetchConcurrency = 0 },
		"no uncompressed room":  func(c *Config) { c.MaxUncompressedSize = 0 },
	}
	for name, change := range cases {
		cfg := DefaultConfig()
		change(&cfg)
		if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Validate = %v, want ErrInvalidConfig", name, err)
		}
		if _, err := New(nil, nil, cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want ErrInvalidConfig", name, err)
		}
	}
}
