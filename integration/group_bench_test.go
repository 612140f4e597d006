package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkGroupSettle measures how long a group of 10 franz-go members
// over 100 partitions takes to settle (every partition owned, balanced)
// after an 11th member joins, with the eager range balancer beside the
// cooperative-sticky one. Each iteration starts the 11th member, waits for
// the balance, then (untimed) stops it and waits for the 10 to rebalance.
func BenchmarkGroupSettle(b *testing.B) {
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"eager-range", kgo.RangeBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := groupServer(b)
			const topic, group, partitions = "settle", "settle-group", int32(100)
			createTopic(b, s, topic, partitions, nil)
			ch := newChanges()
			opts := []kgo.Opt{kgo.Balancers(tc.balancer), kgo.SessionTimeout(10 * time.Second)}
			var members []*memberLog
			for i := range 10 {
				m := newMemberLog(fmt.Sprintf("m%d", i), ch)
				startConsumer(b, s, m, group, topic, opts...)
				members = append(members, m)
			}
			ch.waitFor(b, time.Minute, balanced(partitions, members...))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				joiner := newMemberLog(fmt.Sprintf("joiner%d", i), ch)
				c := startConsumer(b, s, joiner, group, topic, opts...)
				ch.waitFor(b, time.Minute, balanced(partitions, append(members, joiner)...))
				b.StopTimer()
				c.stop()
				ch.waitFor(b, time.Minute, balanced(partitions, members...))
				b.StartTimer()
			}
		})
	}
}
