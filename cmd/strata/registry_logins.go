package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"runtime"
	"sync"
	"time"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/sasl"
)

// registryLogins checks the schema registry's HTTP Basic logins against
// the users' SCRAM credentials. A check costs a PBKDF2 of the credential's
// iterations (milliseconds of CPU), and Confluent's clients send the
// password with every request, so:
//   - a password checked is remembered for verifiedFor, as long as the
//     user's credential is the one it was checked against (a changed or
//     deleted credential ends it at once);
//   - at most half the cores' worth of checks run at once, so that
//     guesses sent in parallel cannot take the broker's CPU;
//   - a failed login is answered after connection.failed.authentication.
//     delay.ms, doubled for each failure from its host within a minute, as
//     on the Kafka listeners.
type registryLogins struct {
	state      func() *meta.State
	delay      time.Duration
	failures   sasl.Failures
	checks     chan struct{}
	mu         sync.Mutex
	verified   map[[sha256.Size]byte]verifiedLogin
	verifiedAt func() time.Time
}

// verifiedLogin is a password that checked against a credential.
type verifiedLogin struct {
	user      string
	mechanism string
	storedKey []byte
	until     time.Time
}

// verifiedFor is how long a checked password is taken without another
// PBKDF2.
const verifiedFor = time.Minute

func newRegistryLogins(state func() *meta.State, failedDelay time.Duration) *registryLogins {
	return &registryLogins{
		state: state, delay: failedDelay,
		checks:     make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2)),
		verified:   map[[sha256.Size]byte]verifiedLogin{},
		verifiedAt: time.Now,
	}
}

// check reports whether password is user's, waiting, when it is not,
// the failed login's delay for host (or until ctx ends).
func (l *registryLogins) check(ctx context.Context, host, user, password string) bool {
	key := sha256.Sum256([]byte(user + "\x00" + password))
	if l.remembered(key, user) {
		return true
	}
	select {
	case l.checks <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	cred, ok := sasl.VerifyPassword(l.state(), user, password)
	<-l.checks
	if ok {
		l.mu.Lock()
		now := l.verifiedAt()
		for k, v := range l.verified {
			if now.After(v.until) {
				delete(l.verified, k)
			}
		}
		l.verified[key] = verifiedLogin{user: user, mechanism: cred.Mechanism, storedKey: cred.StoredKey, until: now.Add(verifiedFor)}
		l.mu.Unlock()
		return true
	}
	timer := time.NewTimer(l.failures.Delay(host, l.delay))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	return false
}

// remembered reports whether key's password checked within verifiedFor
// against the credential a check would use now (SHA-512's if the user has
// both, as sasl.CheckPassword).
func (l *registryLogins) remembered(key [sha256.Size]byte, user string) bool {
	l.mu.Lock()
	v, ok := l.verified[key]
	l.mu.Unlock()
	if !ok || v.user != user || l.verifiedAt().After(v.until) {
		return false
	}
	st := l.state()
	for _, m := range []string{sasl.ScramSHA512, sasl.ScramSHA256} {
		if cred, ok := st.ScramCredential(user, m); ok {
			return m == v.mechanism && bytes.Equal(cred.StoredKey, v.storedKey)
		}
	}
	return false
}
