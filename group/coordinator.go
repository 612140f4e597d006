package group

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"time"

	"github.com/stratalog/strata/meta"
)

// Offsets is the coordinator's window on the metadata group, where committed
// offsets live. *meta.Node provides it.
type Offsets interface {
	State() *meta.State
	Propose(ctx context.Context, cmd meta.Command) (meta.Result, error)
}

// Logs answers the lag questions about partitions this broker serves.
type Logs interface {
	// HighWatermark is the partition's end offset as consumers see it.
	HighWatermark(topic string, partition int32) (int64, error)
	// LogStartOffset is the partition's first offset a consumer can read
	// (in the bucket, for a tiered partition).
	LogStartOffset(topic string, partition int32) (int64, error)
	// TimestampAt is the first timestamp (Unix ms) of the batch holding
	// offset.
	TimestampAt(topic string, partition int32, offset int64) (int64, error)
}

// Deps are what a coordinator is built from besides its configuration.
type Deps struct {
	Offsets Offsets
	Logs    Logs
	// Logger receives the coordinator's logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Coordinates reports whether this broker coordinates a group, for
	// offset retention (only a group's coordinator knows whether it has
	// members, so only it expires the group's offsets) and for ListGroups,
	// which lists a broker's own groups. It is called on the
	// coordinator's loop and must not block. Nil means every group (a
	// single broker).
	Coordinates func(groupID string) bool
}

// Coordinator runs every consumer group this broker coordinates.
//
// Goroutines: run, started by New and stopped by Close, owns all group
// state; every request is a closure it executes in turn. Timers (rebalance,
// session, pending member) post closures to it and post nothing once it
// stopped. Callers wait on futures: a buffered channel the loop fills once.
// expireOffsetsLoop, started by New and stopped by Close, runs the offset
// retention passes (retention.go), asking run for membership like any
// caller.
type Coordinator struct {
	config  Config
	offsets Offsets
	logs    Logs
	log     *slog.Logger
	now     func() time.Time
	// coordinates is Deps.Coordinates; called on the loop.
	coordinates func(groupID string) bool

	actions chan func()
	stop    chan struct{}
	done    chan struct{}
	// cancelExpiry stops expireOffsetsLoop, which closes expiryDone.
	cancelExpiry context.CancelFunc
	expiryDone   chan struct{}

	// Owned by run. groups holds a group only while something of it lives
	// in memory: members, member ids handed out and not yet joined with, or
	// a rebalance under way. An Empty group with none of those is forgotten
	// (forgetIfIdle); its committed offsets stay in the metadata group,
	// which Describe, List and FetchOffsets read.
	groups map[string]*group
	nextID uint64
	// emptySince is when each group with committed offsets was last found
	// Empty, which starts its offsets' retention clock (retention.go).
	// Owned by run.
	emptySince map[string]time.Time
}

// New starts a coordinator; Close stops it.
func New(cfg Config, deps Deps) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("group: config: %w", err)
	}
	if deps.Offsets == nil || deps.Logs == nil {
		return nil, errors.New("group: offsets and logs are required")
	}
	c := &Coordinator{
		config:      cfg,
		offsets:     deps.Offsets,
		logs:        deps.Logs,
		log:         deps.Logger,
		now:         deps.Now,
		coordinates: deps.Coordinates,
		actions:     make(chan func()),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
		expiryDone:  make(chan struct{}),
		groups:      map[string]*group{},
		emptySince:  map[string]time.Time{},
	}
	if c.log == nil {
		c.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.coordinates == nil {
		c.coordinates = func(string) bool { return true }
	}
	go c.run()
	var expiryCtx context.Context
	expiryCtx, c.cancelExpiry = context.WithCancel(context.Background())
	go c.expireOffsetsLoop(expiryCtx)
	return c, nil
}

// Close stops the loop. Requests still waiting fail with ErrClosed; group
// membership is gone (committed offsets stay in the metadata group).
func (c *Coordinator) Close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.cancelExpiry()
	<-c.done
	<-c.expiryDone
}

func (c *Coordinator) run() {
	defer close(c.done)
	for {
		select {
		case f := <-c.actions:
			f()
		case <-c.stop:
			for _, g := range c.groups {
				g.stopTimers()
			}
			return
		}
	}
}

// post runs f on the loop, unless the coordinator stopped.
func (c *Coordinator) post(f func()) bool {
	select {
	case c.actions <- f:
		return true
	case <-c.stop:
		return false
	}
}

// call runs f on the loop and waits for the value it sends on the future it
// is given, which it may fill later (a join waits for the rebalance).
func call[T any](ctx context.Context, c *Coordinator, f func(future chan<- T)) (T, error) {
	future := make(chan T, 1)
	var zero T
	if !c.post(func() { f(future) }) {
		return zero, ErrClosed
	}
	select {
	case v := <-future:
		return v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-c.stop:
		return zero, ErrClosed
	}
}

// after runs f on the loop after d. The returned timer stops it.
func (c *Coordinator) after(d time.Duration, f func()) *time.Timer {
	return time.AfterFunc(d, func() { c.post(f) })
}

// ChooseCoordinator is the broker that coordinates groupID among the live
// brokers. It is the one place the choice is made. brokers must not be
// empty.
//
// The choice is rendezvous hashing: each broker scores hash(group, broker)
// and the highest wins. When a broker joins, only the groups it now wins
// move (about 1/N of them), and when one is fenced only its own groups
// move; a hash modulo the broker count would move most groups either way,
// and every group that moves rebalances, since membership lives in the
// coordinator's memory.
func ChooseCoordinator(groupID string, brokers []int32) int32 {
	best, bestScore := brokers[0], uint64(0)
	for i, b := range brokers {
		h := fnv.New64a()
		h.Write([]byte(groupID))
		h.Write([]byte{0, byte(b >> 24), byte(b >> 16), byte(b >> 8), byte(b)})
		score := mix64(h.Sum64())
		if i == 0 || score > bestScore || (score == bestScore && b < best) {
			best, bestScore = b, score
		}
	}
	return best
}

// mix64 is the SplitMix64 finalizer: FNV's low bits vary little with the
// broker id appended last, and a finalizer spreads them over the score.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// newMemberID makes a member id the way Kafka does: the client id, a dash,
// and something unique.
func (c *Coordinator) newMemberID(clientID string) string {
	c.nextID++
	return fmt.Sprintf("%s-%d-%d", clientID, c.now().UnixNano(), c.nextID)
}

// groupFor returns the group named id, creating an empty one. Only a join
// creates groups; it forgets the group again if it added nobody.
func (c *Coordinator) groupFor(id string) *group {
	g, ok := c.groups[id]
	if !ok {
		g = newGroup(c, id)
		c.groups[id] = g
	}
	return g
}

// forgetIfIdle drops g from memory once it is Empty with no members and no
// pending member ids, so that groups that come and go (console consumers
// with random group ids) do not pile up. Nothing is lost: such a group has
// no timers running and no futures waiting, and what it answers (Empty, or
// Dead without committed offsets) comes from the metadata group. The stall
// tracking goes with it, as on a restart. A new join makes a fresh group.
//
// Loop only. A g that is no longer the one in the map (already forgotten,
// or replaced by a newer group of the same id) is left alone.
func (c *Coordinator) forgetIfIdle(g *group) {
	if c.groups[g.id] != g || g.state != Empty || len(g.members) > 0 || len(g.pending) > 0 {
		return
	}
	delete(c.groups, g.id)
}
