package replica

import (
	"errors"
	"math"
	"testing"

	"github.com/stratalog/strata/record"
)

func header(producerID int64, epoch int16, baseSequence int32, records int32) record.Header {
	return record.Header{ProducerID: producerID, ProducerEpoch: epoch, BaseSequence: baseSequence, LastOffsetDelta: records - 1, NumRecords: records}
}

// TestProducerStates walks Kafka's idempotence rules step by step: each
// step checks a batch and, when it is accepted and not a retry, records it
// at the next offset.
func TestProducerStates(t *testing.T) {
	t.Parallel()
	type step struct {
		batch     record.Header
		wantErr   error
		duplicate int64 // original base offset, when the batch is a retry; -1 otherwise
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"non-idempotent batches are not checked", []step{
			{header(-1, -1, -1, 3), nil, -1},
			{header(-1, -1, -1, 3), nil, -1},
		}},
		{"a negative producer id other than -1 is no producer either, as in Kafka", []step{
			{header(-2, 0, 0, 3), nil, -1},
			{header(-2, 0, 0, 3), nil, -1},
			{header(-2, 0, 9, 1), nil, -1},
		}},
		{"in sequence", []step{
			{header(7, 0, 0, 3), nil, -1},
			{header(7, 0, 3, 2), nil, -1},
			{header(7, 0, 5, 1), nil, -1},
		}},
		{"unknown producer accepted at any sequence", []step{
			{header(7, 0, 42, 1), nil, -1},
			{header(7, 0, 43, 1), nil, -1},
		}},
		{"gap", []step{
			{header(7, 0, 0, 3), nil, -1},
			{header(7, 0, 4, 1), ErrOutOfOrderSequence, -1},
		}},
		{"retry of the last batch", []step{
			{header(7, 0, 0, 3), nil, -1},
			{header(7, 0, 3, 2), nil, -1},
			{header(7, 0, 3, 2), nil, 3},
		}},
		{"retry of the fifth-newest batch, not the sixth", []step{
			{header(7, 0, 0, 1), nil, -1},
			{header(7, 0, 1, 1), nil, -1},
			{header(7, 0, 2, 1), nil, -1},
			{header(7, 0, 3, 1), nil, -1},
			{header(7, 0, 4, 1), nil, -1},
			{header(7, 0, 5, 1), nil, -1},
			{header(7, 0, 1, 1), nil, 1},
			{header(7, 0, 0, 1), ErrOutOfOrderSequence, -1},
		}},
		{"same first sequence, different length is no retry", []step{
			{header(7, 0, 0, 3), nil, -1},
			{header(7, 0, 0, 2), ErrOutOfOrderSequence, -1},
		}},
		{"older epoch fenced", []step{
			{header(7, 2, 0, 1), nil, -1},
			{header(7, 1, 1, 1), ErrInvalidProducerEpoch, -1},
		}},
		{"newer epoch starts at zero", []step{
			{header(7, 0, 0, 5), nil, -1},
			{header(7, 1, 3, 1), ErrOutOfOrderSequence, -1},
			{header(7, 1, 0, 1), nil, -1},
			{header(7, 1, 1, 1), nil, -1},
			{header(7, 0, 5, 1), ErrInvalidProducerEpoch, -1},
		}},
		{"sequences wrap at MaxInt32", []step{
			{header(7, 0, math.MaxInt32-1, 2), nil, -1},
			{header(7, 0, 0, 1), nil, -1},
		}},
		{"negative sequence from an idempotent producer", []step{
			{header(7, 0, -1, 1), ErrOutOfOrderSequence, -1},
		}},
		{"producers are independent", []step{
			{header(7, 0, 0, 1), nil, -1},
			{header(8, 0, 0, 1), nil, -1},
			{header(7, 0, 1, 1), nil, -1},
			{header(8, 0, 2, 1), ErrOutOfOrderSequence, -1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newProducerStates()
			next := int64(0)
			for i, st := range tc.steps {
				check, err := s.check(st.batch)
				if !errors.Is(err, st.wantErr) {
					t.Fatalf("step %d: error %v, want %v", i, err, st.wantErr)
				}
				if err != nil {
					continue
				}
				if st.duplicate >= 0 {
					if check.duplicate == nil || check.duplicate.baseOffset != st.duplicate {
						t.Fatalf("step %d: duplicate %+v, want the batch at %d", i, check.duplicate, st.duplicate)
					}
					continue
				}
				if check.duplicate != nil {
					t.Fatalf("step %d: taken for a retry of the batch at %d", i, check.duplicate.baseOffset)
				}
				s.record(st.batch, next, 0)
				next += int64(st.batch.NumRecords)
			}
		})
	}
}

func TestProducerStatesExpire(t *testing.T) {
	t.Parallel()
	s := newProducerStates()
	s.record(header(1, 0, 0, 1), 0, 100)
	s.record(header(2, 0, 0, 1), 1, 200)
	s.expire(150)
	if _, ok := s.producers[1]; ok {
		t.Fatal("producer 1, last seen at 100, survived expiry at 150")
	}
	if _, ok := s.producers[2]; !ok {
		t.Fatal("producer 2, last seen at 200, expired at 150")
	}
}
