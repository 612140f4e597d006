package meta

import (
	"errors"
	"testing"
)

// TestBrokerConfigs: a broker's own value wins over the cluster default,
// which wins over the built-in default; deleting returns to the next one.
func TestBrokerConfigs(t *testing.T) {
	t.Parallel()
	h, _ := preconditionBase(t)
	st := h.f.current()
	for _, c := range []struct {
		broker int32
		name   string
		value  string
		source ConfigSource
	}{
		{1, FollowerThrottledRate, "1048576", SourceClusterDefault},
		{2, LeaderThrottledRate, "2097152", SourceBroker},
		{1, LeaderThrottledRate, "9223372036854775807", SourceDefault},
	} {
		if v, src := st.BrokerConfig(c.broker, c.name); v != c.value || src != c.source {
			t.Errorf("broker %d %s = %s from %d, want %s from %d", c.broker, c.name, v, src, c.value, c.source)
		}
	}
	h.mustApply(&AlterBrokerConfigs{Broker: "2", Delete: []string{LeaderThrottledRate}}, &AlterBrokerConfigs{Broker: "1", Set: map[string]string{FollowerThrottledRate: " 5000 "}})
	st = h.f.current()
	if got := st.BrokerConfigs("2"); got != nil {
		t.Fatalf("broker 2's configs after deleting its only one: %v", got)
	}
	if got := st.BrokerRate(1, FollowerThrottledRate); got != 5000 {
		t.Fatalf("broker 1's own follower rate %d, want 5000", got)
	}
	if got := st.BrokerRate(3, FollowerThrottledRate); got != 1048576 {
		t.Fatalf("broker 3's follower rate %d, want the cluster default", got)
	}
}

// TestThrottledReplicaLists: Kafka's partition:broker lists and *.
func TestThrottledReplicaLists(t *testing.T) {
	t.Parallel()
	def, _ := LookupTopicConfig(LeaderThrottledReplicas)
	for value, want := range map[string]string{"": "", "*": "*", " 0:1 , 2:3": "0:1,2:3"} {
		if got, err := def.Validate(value); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", value, got, err, want)
		}
	}
	for _, bad := range []string{"0", "0:x", "-1:2", "0:1,0:1", "*,0:1"} {
		if _, err := def.Validate(bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%q accepted", bad)
		}
	}
	if !ThrottledReplica("0:1,2:3", 2, 3) || ThrottledReplica("0:1,2:3", 2, 1) || !ThrottledReplica("*", 7, 7) || ThrottledReplica("", 0, 0) {
		t.Error("ThrottledReplica does not read lists as Kafka does")
	}
}
