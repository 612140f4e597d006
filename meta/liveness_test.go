package meta

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestLivenessTracker(t *testing.T) {
	t.Parallel()
	l := newLiveness(time.Second, nil)
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	brokers := []Broker{{ID: 1, Epoch: 1}, {ID: 2, Epoch: 2}, {ID: 3, Epoch: 3, Fenced: true}}
	ids := func(bs []Broker) []int32 {
		var out []int32
		for _, b := range bs {
			out = append(out, b.ID)
		}
		return out
	}

	// First sight starts a grace period; nothing expires yet.
	if got := l.expired(brokers, at(0)); len(got) != 0 {
		t.Fatalf("expired at first sight: %v", got)
	}
	l.heard(1, 1, at(900*time.Millisecond))
	if got := ids(l.expired(brokers, at(1500*time.Millisecond))); len(got) != 1 || got[0] != 2 {
		t.Fatalf("at 1.5s: %v, want [2]", got)
	}
	// A heartbeat from an old incarnation does not count for the new one.
	brokers[1].Epoch = 5
	l.heard(2, 2, at(1600*time.Millisecond))
	if got := l.expired(brokers, at(1700*time.Millisecond)); len(got) != 0 {
		t.Fatalf("a new epoch gets a new grace period: %v", got)
	}
	if got := ids(l.expired(brokers, at(2800*time.Millisecond))); len(got) != 2 {
		t.Fatalf("at 2.8s: %v, want [1 2]", got)
	}
	if _, ok := l.lastHeard(1, 1); !ok {
		t.Fatal("lastHeard lost broker 1")
	}
	if _, ok := l.lastHeard(1, 7); ok {
		t.Fatal("lastHeard answered for another epoch")
	}
	// A new leader forgets everything: a fresh grace period for all.
	l.reset()
	if got := l.expired(brokers, at(10*time.Second)); len(got) != 0 {
		t.Fatalf("after reset: %v", got)
	}
	// Unregistered brokers are dropped.
	l.expired(brokers[:1], at(11*time.Second))
	if _, ok := l.lastHeard(2, 5); ok {
		t.Fatal("an unregistered broker is still tracked")
	}
}

func TestLivenessPeriod(t *testing.T) {
	t.Parallel()
	for session, want := range map[time.Duration]time.Duration{
		9 * time.Second: 900 * time.Millisecond, time.Minute: time.Second, 50 * time.Millisecond: 10 * time.Millisecond,
	} {
		if got := livenessPeriod(session); got != want {
			t.Errorf("livenessPeriod(%v) = %v, want %v", session, got, want)
		}
	}
}

// manualClock is a clock that moves only when the test advances it, shared
// by every node of a test cluster.
type manualClock struct {
	mu struct {
		sync.Mutex
		at      time.Time
		tickers map[*manualTicker]bool
	}
}

// manualTicker is one running ticker of a manualClock.
type manualTicker struct {
	tick     chan time.Time // unbuffered: a send completes when the loop takes it
	stopped  chan struct{}
	stopOnce sync.Once
}

func newManualClock() *manualClock {
	c := &manualClock{}
	c.mu.at = time.Unix(1_700_000_000, 0)
	c.mu.tickers = make(map[*manualTicker]bool)
	return c
}

func (c *manualClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.at
}

func (c *manualClock) newTicker(time.Duration) (<-chan time.Time, func()) {
	tk := &manualTicker{tick: make(chan time.Time), stopped: make(chan struct{})}
	c.mu.Lock()
	c.mu.tickers[tk] = true
	c.mu.Unlock()
	return tk.tick, func() {
		tk.stopOnce.Do(func() {
			close(tk.stopped)
			c.mu.Lock()
			delete(c.mu.tickers, tk)
			c.mu.Unlock()
		})
	}
}

// running is the number of tickers not stopped: 1 once a leader checks
// liveness.
func (c *manualClock) running() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.tickers)
}

// advance moves the clock on by d and gives the new time to every running
// ticker, twice. The leadership loop acts on a tick before it receives
// again, so once it has taken the second, its liveness check at the new
// time, with every fencing it proposed, is done. advance returns how many
// tickers took both.
func (c *manualClock) advance(d time.Duration) int {
	c.mu.Lock()
	c.mu.at = c.mu.at.Add(d)
	now := c.mu.at
	tickers := slices.Collect(maps.Keys(c.mu.tickers))
	c.mu.Unlock()
	checked := 0
	for _, tk := range tickers {
		if !tk.deliver(now) {
			continue
		}
		if tk.deliver(now) { // the check at now is done
			checked++
		}
	}
	return checked
}

// deliver sends now on the ticker unless it stops first.
func (tk *manualTicker) deliver(now time.Time) bool {
	select {
	case tk.tick <- now:
		return true
	case <-tk.stopped:
		return false
	}
}

// TestBrokerLivenessAndFencing runs three voters over TCP whose liveness
// checks read one manual clock, so a session passes when the test says
// and not when a busy machine says. The leader fences the broker that
// never heartbeats at the first check past its session, not before, and
// moves its partition's leadership; heartbeats forwarded by a follower
// keep another broker unfenced for as long as they go on; a new leader
// gives every broker a fresh grace period and, once the heartbeats stop,
// fences at the first check past the session again; registering again
// unfences.
func TestBrokerLivenessAndFencing(t *testing.T) {
	// The session is the manual clock's: no wall-clock wait depends on it,
	// but a fencing proposal gets it as its (real) deadline.
	const session = 10 * time.Second
	const step = session / 4
	clk := newManualClock()
	c := newCluster(t, 3, func(cfg *Config) {
		cfg.BrokerSessionTimeout = session
		cfg.livenessClock = clk
	})
	ctx := testCtx(t)
	leader := c.leader()
	follower := c.nodes[(c.index(leader)+1)%3]
	epoch1 := registerBroker(t, follower, 1)
	epoch2 := registerBroker(t, follower, 2)
	if _, err := follower.Propose(ctx, topicCmd("t", 1, 2, 1)); err != nil {
		t.Fatal(err)
	}
	fenced := func(n *Node, id int32) bool {
		b, ok := n.State().Broker(id)
		if !ok {
			t.Fatalf("broker %d is not registered", id)
		}
		return b.Fenced
	}
	heartbeat := func() {
		t.Helper()
		if err := follower.Heartbeat(ctx, 1, epoch1); err != nil {
			t.Fatalf("heartbeat of broker 1 through a follower: %v", err)
		}
	}
	// tick advances the clock one step and waits for the leader's check.
	tick := func() {
		t.Helper()
		if n := clk.advance(step); n != 1 {
			t.Fatalf("%d leaders checked liveness, want 1", n)
		}
	}
	waitFor(t, 10*time.Second, "the leader's liveness checks", func() bool { return clk.running() == 1 })

	// Broker 2 is first seen at the first check and expires at the
	// sixth, when 5 steps (more than a session) have passed.
	for i := 1; i <= 6; i++ {
		heartbeat()
		tick()
		if fenced(leader, 1) {
			t.Fatalf("check %d: the heartbeating broker 1 was fenced", i)
		}
		if got, want := fenced(leader, 2), i == 6; got != want {
			t.Fatalf("check %d, %v after broker 2 was first seen: fenced=%v, want %v", i, time.Duration(i-1)*step, got, want)
		}
	}
	p, _ := leader.State().Partition("t", 0)
	if p.Leader != 1 || len(p.ISR) != 1 || p.ISR[0] != 1 || p.LeaderEpoch != 1 {
		t.Fatalf("partition after fencing its leader: %+v", p)
	}
	if err := follower.Heartbeat(ctx, 2, epoch2); !errors.Is(err, ErrBrokerFenced) {
		t.Fatalf("heartbeat of a fenced broker: %v", err)
	}

	// A new leader: broker 1 stays unfenced through three sessions of
	// heartbeats, then is fenced at the fifth check after the last one.
	c.stop(c.index(leader))
	leader = c.leader()
	waitFor(t, 10*time.Second, "the new leader's liveness checks", func() bool { return clk.running() == 1 })
	for i := 1; i <= 12; i++ {
		tick()
		if fenced(leader, 1) {
			t.Fatalf("check %d under the new leader: the heartbeating broker 1 was fenced", i)
		}
		heartbeat() // at the time of the check
	}
	for i := 1; i <= 5; i++ {
		tick()
		if got, want := fenced(leader, 1), i == 5; got != want {
			t.Fatalf("check %d, %v after broker 1's last heartbeat: fenced=%v, want %v", i, time.Duration(i)*step, got, want)
		}
	}

	res, err := follower.Propose(ctx, brokerCmd(2))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := follower.State().Broker(2); b.Fenced || b.Epoch != res.Epoch || res.Epoch <= epoch2 {
		t.Fatalf("re-registered broker %+v, result epoch %d", b, res.Epoch)
	}
	if err := follower.Heartbeat(ctx, 2, epoch2); !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("heartbeat at the old epoch: %v", err)
	}
	if err := follower.Heartbeat(ctx, 2, res.Epoch); err != nil {
		t.Fatalf("heartbeat at the new epoch: %v", err)
	}
	if err := follower.Heartbeat(ctx, 9, 1); !errors.Is(err, ErrUnknownBroker) {
		t.Fatalf("heartbeat of an unknown broker: %v", err)
	}
}
