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

// TestQuotaEntitiesWithZeroBytesStayApart: names are any strings, NUL
// bytes included; a user and client id whose bytes run together the same
// way are still two entities, each with its own quota.
func TestQuotaEntitiesWithZeroBytesStayApart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	named := func(n string) *QuotaName { return &QuotaName{Name: n} }
	h.mustApply(
		&AlterClientQuota{Entity: QuotaEntity{User: named("a\x00\x02b"), ClientID: named("c")}, Set: map[string]float64{ProducerByteRate: 1}},
		&AlterClientQuota{Entity: QuotaEntity{User: named("a"), ClientID: named("b\x00\x02c")}, Set: map[string]float64{ProducerByteRate: 2}},
	)
	st := h.f.current()
	for _, tc := range []struct {
		user, client string
		want         float64
	}{{"a\x00\x02b", "c", 1}, {"a", "b\x00\x02c", 2}} {
		if got, ok := st.ClientQuota(tc.user, tc.client, ProducerByteRate); !ok || got.Value != tc.want {
			t.Errorf("user %q client %q: quota %v %v, want %v", tc.user, tc.client, got.Value, ok, tc.want)
		}
	}
}
