package meta

import "testing"

// TestUncleanElectionSetting: a topic's unclean.leader.election.enable
// decides; a topic without it takes the controller's default.
func TestUncleanElectionSetting(t *testing.T) {
	for _, c := range []struct {
		broker bool
		topic  map[string]string
		want   bool
	}{
		{false, nil, false},
		{true, nil, true},
		{true, map[string]string{uncleanElectionConfig: "false"}, false},
		{false, map[string]string{uncleanElectionConfig: "true"}, true},
	} {
		n := &Node{cfg: Config{UncleanLeaderElection: c.broker}}
		if got := n.allowsUncleanElection(Topic{Name: "t", Configs: c.topic}); got != c.want {
			t.Errorf("broker default %v, topic configs %v: unclean election allowed %v, want %v", c.broker, c.topic, got, c.want)
		}
	}
}
