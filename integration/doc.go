// Package integration holds end-to-end tests: each starts real `strata
// server` processes (the binary is built once, in TestMain) on ports the
// operating system chooses, and drives them with the clients users have —
// franz-go (kgo, kadm), kcat, and the strata CLI — checking every byte that
// comes back. Faults are real too: the restart test kills the server with
// SIGKILL.
//
// The tests need kcat on PATH (`make test` installs it through
// scripts/test-deps); without it the kcat tests are skipped with a message
// saying so.
package integration
