package meta

import "testing"

// TestClientQuotaPrecedence: Kafka's order, the first entity with the key
// set wins, and a default's usage is metered per client it applies to.
func TestClientQuotaPrecedence(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	named := func(n string) *QuotaName { return &QuotaName{Name: n} }
	def := &QuotaName{Default: true}
	set := func(e QuotaEntity, v float64) *AlterClientQuota {
		return &AlterClientQuota{Entity: e, Set: map[string]float64{ProducerByteRate: v}}
	}
	h.mustApply(
		set(QuotaEntity{ClientID: def}, 8),
		set(QuotaEntity{ClientID: named("etl")}, 7),
		set(QuotaEntity{User: def}, 6),
		set(QuotaEntity{User: def, ClientID: def}, 5),
		set(QuotaEntity{User: def, ClientID: named("etl")}, 4),
		set(QuotaEntity{User: named("alice")}, 3),
		set(QuotaEntity{User: named("alice"), ClientID: def}, 2),
		set(QuotaEntity{User: named("alice"), ClientID: named("etl")}, 1),
	)
	want := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	for i, e := range []QuotaEntity{
		{User: named("alice"), ClientID: named("etl")},
		{User: named("alice"), ClientID: def},
		{User: named("alice")},
		{User: def, ClientID: named("etl")},
		{User: def, ClientID: def},
		{User: def},
		{ClientID: named("etl")},
		{ClientID: def},
	} {
		st := h.f.current()
		got, ok := st.ClientQuota("alice", "etl", ProducerByteRate)
		if !ok || got.Value != want[i] {
			t.Fatalf("with quotas from level %d down: %v %v, want %v", i+1, got, ok, want[i])
		}
		if (got.Meter.User != nil) != (e.User != nil) || (got.Meter.ClientID != nil) != (e.ClientID != nil) ||
			(got.Meter.User != nil && got.Meter.User.Name != "alice") || (got.Meter.ClientID != nil && got.Meter.ClientID.Name != "etl") {
			t.Fatalf("level %d metered as %s", i+1, got.Meter)
		}
		h.mustApply(&AlterClientQuota{Entity: e, Remove: []string{ProducerByteRate}})
	}
	if _, ok := h.f.current().ClientQuota("alice", "etl", ProducerByteRate); ok || h.f.current().HasClientQuotas() {
		t.Fatal("a quota applies after every one was removed")
	}
}
