package meta

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// Client quotas, Kafka's (KIP-55, KIP-124, KIP-546): producer and consumer
// byte rates and a share of request handling time, set for a user, a
// client id, or a user's client id, each name possibly the default of its
// kind, kept in the metadata and enforced by every broker.

func init() {
	registerCommand(cmdAlterClientQuota, "AlterClientQuota", 1, (*AlterClientQuota).apply)
}

// Client quota keys.
const (
	ProducerByteRate  = "producer_byte_rate"
	ConsumerByteRate  = "consumer_byte_rate"
	RequestPercentage = "request_percentage"
)

// QuotaKeys are the quota keys strata enforces.
var QuotaKeys = []string{ConsumerByteRate, ProducerByteRate, RequestPercentage}

// checkQuotaValue checks one quota value: byte rates are whole bytes per
// second, the request share a percentage of one handler's time; both
// positive, as Kafka requires.
func checkQuotaValue(key string, value float64) error {
	switch key {
	case ProducerByteRate, ConsumerByteRate:
		if value < 1 || value != math.Trunc(value) || value > math.MaxInt64 {
			return fmt.Errorf("%w: %s %v: want a whole number of bytes per second, at least 1", ErrInvalidConfig, key, value)
		}
	case RequestPercentage:
		if !(value > 0) || math.IsInf(value, 0) {
			return fmt.Errorf("%w: %s %v: want a positive percentage of one request handler's time", ErrInvalidConfig, key, value)
		}
	default:
		return fmt.Errorf("%w: quota key %q is not one strata enforces (%s)", ErrInvalidConfig, key, QuotaKeys)
	}
	return nil
}

// QuotaName is one part of a quota entity: a name, or the default of its
// kind (Kafka's null name).
type QuotaName struct {
	Name    string `json:"name,omitempty"`
	Default bool   `json:"default,omitempty"`
}

func (n *QuotaName) String() string {
	if n.Default {
		return "<default>"
	}
	return fmt.Sprintf("%q", n.Name)
}

// QuotaEntity is who a quota is for: a user, a client id, or both; nil
// parts are not part of the entity.
type QuotaEntity struct {
	User     *QuotaName `json:"user,omitempty"`
	ClientID *QuotaName `json:"client_id,omitempty"`
}

func (e QuotaEntity) String() string {
	switch {
	case e.User != nil && e.ClientID != nil:
		return "user " + e.User.String() + " client-id " + e.ClientID.String()
	case e.User != nil:
		return "user " + e.User.String()
	case e.ClientID != nil:
		return "client-id " + e.ClientID.String()
	}
	return "no entity"
}

func (e QuotaEntity) check() error {
	if e.User == nil && e.ClientID == nil {
		return fmt.Errorf("%w: a quota entity names a user, a client id or both", ErrInvalidConfig)
	}
	for _, n := range []*QuotaName{e.User, e.ClientID} {
		if n != nil && n.Default && n.Name != "" {
			return fmt.Errorf("%w: a default quota entity has no name (%q)", ErrInvalidConfig, n.Name)
		}
	}
	return nil
}

// key orders entities in the tree: the user part, then the client part,
// each absent (0), default (1) or named (2 and the name), ended by 0 0. A
// name's 0 bytes are written 0 1, so a name cannot end its part early and
// two entities never share a key, while names keep their byte order.
func (e QuotaEntity) key() []byte {
	var out []byte
	for _, n := range []*QuotaName{e.User, e.ClientID} {
		switch {
		case n == nil:
			out = append(out, 0)
		case n.Default:
			out = append(out, 1)
		default:
			out = append(out, 2)
			for i := range len(n.Name) {
				out = append(out, n.Name[i])
				if n.Name[i] == 0 {
					out = append(out, 1)
				}
			}
		}
		out = append(out, 0, 0)
	}
	return out
}

// ClientQuota is the quota values set on one entity.
type ClientQuota struct {
	Entity QuotaEntity        `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// AlterClientQuota sets and removes quota values of one entity, as
// AlterClientQuotas does. Unknown keys and bad values are ErrInvalidConfig.
type AlterClientQuota struct {
	Entity QuotaEntity        `json:"entity"`
	Set    map[string]float64 `json:"set,omitempty"`
	Remove []string           `json:"remove,omitempty"`
}

func (AlterClientQuota) commandType() CommandType { return cmdAlterClientQuota }

func (c *AlterClientQuota) apply(tx *txn) (int64, error) {
	if err := c.Entity.check(); err != nil {
		return 0, err
	}
	key := c.Entity.key()
	values := map[string]float64{}
	if cur, ok := tx.st.clientQuotas.Get(key); ok {
		values = maps.Clone(cur.Values)
	}
	for _, k := range c.Remove {
		if !slices.Contains(QuotaKeys, k) {
			return 0, fmt.Errorf("%w: quota key %q is not one strata enforces (%s)", ErrInvalidConfig, k, QuotaKeys)
		}
		if _, ok := c.Set[k]; ok {
			return 0, fmt.Errorf("%w: quota key %q both set and removed", ErrInvalidConfig, k)
		}
		delete(values, k)
	}
	for _, k := range sortedKeys(c.Set) {
		if err := checkQuotaValue(k, c.Set[k]); err != nil {
			return 0, err
		}
		values[k] = c.Set[k]
	}
	if len(values) == 0 {
		tx.st.clientQuotas, _, _ = tx.st.clientQuotas.Delete(key)
	} else {
		tx.st.clientQuotas, _, _ = tx.st.clientQuotas.Insert(key, &ClientQuota{Entity: c.Entity, Values: values})
	}
	tx.changed(Change{Kind: ChangeClientQuota})
	return 0, nil
}

// ClientQuotas returns every entity's quota values, in entity order.
func (s *State) ClientQuotas() []ClientQuota {
	var out []ClientQuota
	s.clientQuotas.Root().Walk(func(_ []byte, q *ClientQuota) bool {
		out = append(out, ClientQuota{Entity: q.Entity, Values: maps.Clone(q.Values)})
		return false
	})
	return out
}

// HasClientQuotas reports whether any quota is set.
func (s *State) HasClientQuotas() bool { return s.clientQuotas.Len() > 0 }

// ResolvedQuota is the quota that applies to a client for one key: its
// value, and the entity whose usage it limits, with default parts replaced
// by the client's own names (each user a default applies to has a quota
// of its own, as in Kafka).
type ResolvedQuota struct {
	Value float64
	Meter QuotaEntity
}

// ClientQuota returns the quota of key that applies to a request by user
// with client id clientID, by Kafka's precedence: user and client id, user
// and default client id, user, default user and client id, default user
// and default client id, default user, client id, default client id. It
// reports false when none applies.
func (s *State) ClientQuota(user, clientID, key string) (ResolvedQuota, bool) {
	if s.clientQuotas.Len() == 0 {
		return ResolvedQuota{}, false
	}
	named := func(n string) *QuotaName { return &QuotaName{Name: n} }
	def := &QuotaName{Default: true}
	for _, e := range []QuotaEntity{
		{User: named(user), ClientID: named(clientID)},
		{User: named(user), ClientID: def},
		{User: named(user)},
		{User: def, ClientID: named(clientID)},
		{User: def, ClientID: def},
		{User: def},
		{ClientID: named(clientID)},
		{ClientID: def},
	} {
		q, ok := s.clientQuotas.Get(e.key())
		if !ok {
			continue
		}
		v, ok := q.Values[key]
		if !ok {
			continue
		}
		meter := QuotaEntity{}
		if e.User != nil {
			meter.User = named(user)
		}
		if e.ClientID != nil {
			meter.ClientID = named(clientID)
		}
		return ResolvedQuota{Value: v, Meter: meter}, true
	}
	return ResolvedQuota{}, false
}
