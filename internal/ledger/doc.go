// Package ledger is the checker fault tests use to prove that no
// acknowledged record was lost. A run's clients report every produce
// outcome and every consumed record into a Ledger; once the faults have
// settled, one complete read of the topic goes to Check, which
// lists every way the final log breaks what those clients were told.
//
// # Usage
//
//	led := ledger.New()
//	// every produce's promise: led.Acked(r) or led.Failed(r, err);
//	// every record a consumer polls during the run: led.Consumed(r)
//	// … faults, then healing; then, with every produce resolved, one
//	// complete read of the topic as final …
//	if err := led.Check(final); err != nil { t.Fatal(err) }
//	t.Log(led.Summary(final)) // acked 2990, failed 10 (4 in the final log; …), …
//
// Each produced value must be distinct; Value makes such values.
//
// # What Check guarantees to catch
//
// Check compares the ledger with a final read that holds every record from
// the log start to the high watermark of every partition, in offset order
// within each partition. It reports, counted in full and the first 20
// listed:
//
//  1. lost, moved: an acknowledged record that is not in the final log at
//     the topic, partition and offset it was acknowledged at;
//  2. order: two acknowledged records of one producer in one partition
//     whose sequence numbers (see Value) run backwards in offset order;
//  3. duplicate: any record value, acknowledged or not, in the final log
//     more than once;
//  4. gap: a partition's offsets not dense, each one past the one read
//     before it (so the topic must not be compacted or transactional);
//  5. vanished, changed: a record a consumer saw during the run that is not
//     in the final log at the same position with the same value;
//
// and two that make the rest trustworthy: unproduced, a record in the final
// log that no produce was reported for (an invented or corrupted record,
// or a produce still unresolved when Check ran), and resolved twice, one
// value reported as acked or failed more than once (two produces of the
// same value, which would make it ambiguous).
//
// A failed produce may or may not be in the final log; only rule 3 applies
// to it. Summary counts how many of them made it.
//
// # Values
//
// Value(producer, seq) is "ledger:<producer>:<seq>"; ParseValue reads it
// back and rejects anything else. Rule 2 applies only to values in this
// form; the other checks compare values byte for byte, so a test may
// produce other distinct values too.
package ledger
