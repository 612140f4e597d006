// Package metatest gives tests a real metadata node: a single-voter Raft
// group on a loopback port, its data in the test's temporary directory,
// with short timeouts so that it elects itself at once, and a broker
// session timeout long enough that no test's broker is fenced for not
// heartbeating.
package metatest

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stratalog/strata/meta"
)

// Open starts a node, waits until it takes proposals, and closes it when
// t ends.
func Open(t testing.TB) *meta.Node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := meta.DefaultConfig()
	cfg.Listener = ln
	cfg.BindAddr = ln.Addr().String()
	cfg.DataDir = filepath.Join(t.TempDir(), "meta")
	cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
	// A test's brokers need not heartbeat: none is fenced for its silence
	// while the test runs, however slow the machine.
	cfg.BrokerSessionTimeout = 24 * time.Hour
	node, err := meta.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := node.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return node
}
