package meta

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestDefaultConfigIsValid(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if !cfg.voter() || cfg.BrokerSessionTimeout != 9*time.Second {
		t.Fatalf("default %+v", cfg)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	peers := []Peer{{ID: "a", Address: "10.0.0.1:9093"}, {ID: "b", Address: "10.0.0.2:9093"}}
	cases := map[string]func(*Config){
		"empty node id":             func(c *Config) { c.NodeID = "" },
		"node id with a comma":      func(c *Config) { c.NodeID = "a,b" },
		"bind address without port": func(c *Config) { c.BindAddr = "localhost" },
		"wildcard advertise":        func(c *Config) { c.AdvertiseAddr = "0.0.0.0:9093" },
		"advertise without port":    func(c *Config) { c.AdvertiseAddr = "host" },
		"empty data dir":            func(c *Config) { c.DataDir = "" },
		"duplicate peer id":         func(c *Config) { c.Peers = []Peer{peers[0], {ID: "a", Address: "h:1"}} },
		"duplicate peer address":    func(c *Config) { c.Peers = []Peer{peers[0], {ID: "c", Address: peers[0].Address}} },
		"peer without id":           func(c *Config) { c.Peers = []Peer{{Address: "h:1"}} },
		"peer with port 0":          func(c *Config) { c.Peers = []Peer{{ID: "a", Address: "h:0"}} },
		"advertise differs from peer entry": func(c *Config) {
			c.NodeID, c.Peers, c.AdvertiseAddr = "a", peers, "10.0.0.9:9093"
		},
		"zero snapshot threshold":   func(c *Config) { c.SnapshotThreshold = 0 },
		"tiny snapshot interval":    func(c *Config) { c.SnapshotInterval = time.Millisecond },
		"no snapshots kept":         func(c *Config) { c.SnapshotRetain = 0 },
		"election below heartbeat":  func(c *Config) { c.ElectionTimeout = c.HeartbeatTimeout / 2 },
		"lease above heartbeat":     func(c *Config) { c.LeaderLeaseTimeout = 2 * c.HeartbeatTimeout },
		"zero commit timeout":       func(c *Config) { c.CommitTimeout = 0 },
		"zero session timeout":      func(c *Config) { c.BrokerSessionTimeout = 0 },
		"batch too small":           func(c *Config) { c.MaxBatchBytes = 100 },
		"batch above the frame cap": func(c *Config) { c.MaxBatchBytes = maxFrameBytes },
	}
	for name, mutate := range cases {
		cfg := DefaultConfig()
		mutate(&cfg)
		if err := cfg.Validate(); !errors.Is(err, ErrInvalidNodeConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
	cfg := DefaultConfig()
	cfg.NodeID, cfg.Peers = "c", peers
	if err := cfg.Validate(); err != nil || cfg.voter() {
		t.Fatalf("a node outside the peer list is a valid non-voter: %v, voter %v", err, cfg.voter())
	}
}

func TestParsePeers(t *testing.T) {
	t.Parallel()
	got, err := ParsePeers(" 1=a:1, 2=b:2 ")
	if err != nil || !slices.Equal(got, []Peer{{ID: "1", Address: "a:1"}, {ID: "2", Address: "b:2"}}) {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := ParsePeers(""); err != nil || got != nil {
		t.Fatalf("empty: %v %v", got, err)
	}
	for _, bad := range []string{"1", "=a:1", "1=", "1=a:1,,2=b:2"} {
		if _, err := ParsePeers(bad); !errors.Is(err, ErrInvalidNodeConfig) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
