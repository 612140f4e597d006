package meta

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
)

// Dynamic broker configs, Kafka's way: set with IncrementalAlterConfigs on a
// broker resource, for one broker (its id) or as the cluster-wide default
// (the empty name), kept in the metadata and applied by every broker
// without a restart. A broker's own value wins over the default, which wins
// over the config's built-in default.

func init() {
	registerCommand(cmdAlterBrokerConfigs, "AlterBrokerConfigs", 1, (*AlterBrokerConfigs).apply)
}

// Dynamic broker config names.
const (
	// LeaderThrottledRate caps, per broker, the bytes per second its
	// leaders send to throttled followers that are not in the ISR.
	LeaderThrottledRate = "leader.replication.throttled.rate"
	// FollowerThrottledRate caps, per broker, the bytes per second its
	// throttled followers that are not in the ISR fetch.
	FollowerThrottledRate = "follower.replication.throttled.rate"
)

var brokerConfigDefs = []ConfigDef{
	longConfig(FollowerThrottledRate, math.MaxInt64, 1, math.MaxInt64,
		"Bytes per second this broker's followers fetch for the partitions follower.replication.throttled.replicas names, while they are out of the ISR."),
	longConfig(LeaderThrottledRate, math.MaxInt64, 1, math.MaxInt64,
		"Bytes per second this broker's leaders send to followers out of the ISR, for the partitions leader.replication.throttled.replicas names."),
}

// BrokerConfigDefs returns every dynamic broker config, sorted by name.
func BrokerConfigDefs() []ConfigDef { return slices.Clone(brokerConfigDefs) }

// LookupBrokerConfig returns the definition of the named dynamic broker
// config.
func LookupBrokerConfig(name string) (ConfigDef, bool) {
	i := slices.IndexFunc(brokerConfigDefs, func(d ConfigDef) bool { return d.Name == name })
	if i < 0 {
		return ConfigDef{}, false
	}
	return brokerConfigDefs[i], true
}

// ValidateBrokerConfigs checks dynamic broker configs and returns them in
// canonical form. Errors wrap ErrInvalidConfig.
func ValidateBrokerConfigs(configs map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(configs))
	for _, name := range sortedKeys(configs) {
		def, ok := LookupBrokerConfig(name)
		if !ok {
			return nil, fmt.Errorf("%w: %q is not a dynamic broker config strata has (it has %s)", ErrInvalidConfig, name, brokerConfigNames())
		}
		value, err := def.Validate(configs[name])
		if err != nil {
			return nil, err
		}
		out[name] = value
	}
	return out, nil
}

func brokerConfigNames() string {
	names := ""
	for i, d := range brokerConfigDefs {
		if i > 0 {
			names += ", "
		}
		names += d.Name
	}
	return names
}

// BrokerConfigs is the dynamic configs set on one broker resource: Broker
// is a broker id in decimal, or "" for the cluster-wide default.
type BrokerConfigs struct {
	Broker  string            `json:"broker"`
	Configs map[string]string `json:"configs"`
}

// checkBrokerResource accepts "" and a non-negative decimal broker id.
func checkBrokerResource(name string) error {
	if name == "" {
		return nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil || id < 0 || strconv.FormatInt(id, 10) != name {
		return fmt.Errorf("%w: broker resource %q is neither a broker id nor the empty name of the cluster default", ErrInvalidConfig, name)
	}
	return nil
}

// AlterBrokerConfigs sets and deletes dynamic configs of one broker
// resource (Broker: an id, or "" for the cluster default), as
// IncrementalAlterConfigs does. Every name must be a dynamic broker config
// and every value valid (else ErrInvalidConfig).
type AlterBrokerConfigs struct {
	Broker string            `json:"broker"`
	Set    map[string]string `json:"set,omitempty"`
	Delete []string          `json:"delete,omitempty"`
}

func (AlterBrokerConfigs) commandType() CommandType { return cmdAlterBrokerConfigs }

func (c *AlterBrokerConfigs) apply(tx *txn) (int64, error) {
	if err := checkBrokerResource(c.Broker); err != nil {
		return 0, err
	}
	next := map[string]string{}
	if cur, ok := tx.st.brokerConfigs.Get([]byte(c.Broker)); ok {
		next = maps.Clone(cur.Configs)
	}
	for _, name := range c.Delete {
		if _, ok := LookupBrokerConfig(name); !ok {
			return 0, fmt.Errorf("%w: %q is not a dynamic broker config strata has (it has %s)", ErrInvalidConfig, name, brokerConfigNames())
		}
		if _, ok := c.Set[name]; ok {
			return 0, fmt.Errorf("%w: config %q both set and deleted", ErrInvalidConfig, name)
		}
		delete(next, name)
	}
	maps.Copy(next, c.Set)
	next, err := ValidateBrokerConfigs(next)
	if err != nil {
		return 0, err
	}
	if len(next) == 0 {
		tx.st.brokerConfigs, _, _ = tx.st.brokerConfigs.Delete([]byte(c.Broker))
	} else {
		tx.st.brokerConfigs, _, _ = tx.st.brokerConfigs.Insert([]byte(c.Broker), &BrokerConfigs{Broker: c.Broker, Configs: next})
	}
	tx.changed(Change{Kind: ChangeBrokerConfig})
	return 0, nil
}

// ConfigSource is where an effective config value comes from.
type ConfigSource uint8

// Config sources, as Kafka's DescribeConfigs names them.
const (
	SourceDefault        ConfigSource = iota // the built-in default
	SourceClusterDefault                     // the cluster-wide dynamic default
	SourceBroker                             // set on the broker itself
)

// BrokerConfigs returns the dynamic configs set on a broker resource (an
// id in decimal, or "" for the cluster default); nil if none.
func (s *State) BrokerConfigs(broker string) map[string]string {
	if c, ok := s.brokerConfigs.Get([]byte(broker)); ok {
		return maps.Clone(c.Configs)
	}
	return nil
}

// BrokerConfig returns broker's effective value of a dynamic broker config
// and where it comes from. name must be a dynamic broker config.
func (s *State) BrokerConfig(broker int32, name string) (string, ConfigSource) {
	if c, ok := s.brokerConfigs.Get([]byte(strconv.Itoa(int(broker)))); ok {
		if v, ok := c.Configs[name]; ok {
			return v, SourceBroker
		}
	}
	if c, ok := s.brokerConfigs.Get(nil); ok {
		if v, ok := c.Configs[name]; ok {
			return v, SourceClusterDefault
		}
	}
	def, _ := LookupBrokerConfig(name)
	return def.Default, SourceDefault
}

// BrokerRate is broker's effective value of a rate config (bytes per
// second), math.MaxInt64 when none is set.
func (s *State) BrokerRate(broker int32, name string) int64 {
	v, _ := s.BrokerConfig(broker, name)
	rate, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return math.MaxInt64
	}
	return rate
}
