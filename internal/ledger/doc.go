// Package ledger is the checker fault tests use to prove that no
// acknowledged record was lost. A run's clients report every produce
// outcome and every consumed record into a Ledger; once the faults have
// settled, one complete read of the topic (ReadAll) goes to Check, which
// lists every way the final log breaks what those clients were told.
//
// # Usage
//
//	led := ledger.New()
//	load, err := ledger.Start(led, ledger.Options{Seeds: seeds, Topic: topic, Producers: 3, Consume: true})
//	// … kill -9 a leader, SIGSTOP a follower, partition the network, heal …
//	err = load.Stop(ctx)                         // every produce resolved, clients closed
//	final, err := ledger.ReadAll(ctx, seeds, topic)
//	if err := led.Check(final); err != nil { t.Fatal(err) }
//	t.Log(led.Summary(final))                    // acked 2990, failed 10 (4 in the final log; …), …
//
// A test that drives its own clients reports into the ledger from its
// promises (Acked, Failed) and poll loops (Consumed), and produces values
// made by Value, each distinct.
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
//
// # Goroutines
//
// Start runs one send loop per producer, each with its own kgo client, and
// with Options.Consume one poll loop with its own group member. Stop ends
// them all, waits for the promises, and closes the clients; it must be
// called, and may be called more than once.
package ledger
