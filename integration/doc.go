// Package integration holds end-to-end tests: each starts real `strata
// server` processes (the binary is built once, in TestMain) on loopback
// ports below the kernel's ephemeral range, and drives them with the
// clients users have — franz-go (kgo, kadm), kcat (librdkafka), kafkajs,
// sarama and the strata CLI — checking every byte that comes back. Faults are real
// too: servers are killed with SIGKILL, a fault proxy sits between broker
// and bucket, and a size-limited tmpfs fills up.
//
// The tests need kcat on PATH and kafkajs in bin/kafkajs (`make test`
// installs both through scripts/test-deps); without them those tests are
// skipped with a message saying so.
package integration
