package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"slices"
)

// The mechanisms, by their SASL names.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Mechanisms are every mechanism the package serves.
var Mechanisms = []string{Plain, ScramSHA256, ScramSHA512}

// ScramMechanisms are the mechanisms a credential is stored for.
var ScramMechanisms = []string{ScramSHA256, ScramSHA512}

// The iteration counts Kafka accepts for a SCRAM credential.
const (
	MinIterations     = 4096
	MaxIterations     = 16384
	DefaultIterations = 8192
)

// ErrInvalidCredential is a credential that cannot be stored: an unknown
// mechanism, an iteration count out of range, an empty salt or password.
var ErrInvalidCredential = errors.New("sasl: invalid credential")

// Credential is a user's SCRAM credential for one mechanism, as stored.
type Credential struct {
	Mechanism  string `json:"mechanism"`
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// hashOf is the hash function of a SCRAM mechanism.
func hashOf(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case ScramSHA256:
		return sha256.New, nil
	case ScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("%w: mechanism %q: want %s or %s", ErrInvalidCredential, mechanism, ScramSHA256, ScramSHA512)
}

// NewCredential derives the credential of a salted password (RFC 5802's
// SaltedPassword, Hi(password, salt, iterations)), as
// AlterUserScramCredentials delivers it.
func NewCredential(mechanism string, saltedPassword, salt []byte, iterations int) (Credential, error) {
	h, err := hashOf(mechanism)
	if err != nil {
		return Credential{}, err
	}
	if len(salt) == 0 {
		return Credential{}, fmt.Errorf("%w: empty salt", ErrInvalidCredential)
	}
	if len(saltedPassword) == 0 {
		return Credential{}, fmt.Errorf("%w: empty salted password", ErrInvalidCredential)
	}
	if iterations < MinIterations || iterations > MaxIterations {
		return Credential{}, fmt.Errorf("%w: %d iterations: want %d to %d", ErrInvalidCredential, iterations, MinIterations, MaxIterations)
	}
	clientKey := mac(h, saltedPassword, "Client Key")
	stored := h()
	stored.Write(clientKey)
	return Credential{
		Mechanism:  mechanism,
		Salt:       slices.Clone(salt),
		Iterations: iterations,
		StoredKey:  stored.Sum(nil),
		ServerKey:  mac(h, saltedPassword, "Server Key"),
	}, nil
}

// FromPassword salts password with a fresh random salt and derives its
// credential.
func FromPassword(mechanism, password string, iterations int) (Credential, error) {
	if password == "" {
		return Credential{}, fmt.Errorf("%w: empty password", ErrInvalidCredential)
	}
	salt := make([]byte, 24)
	rand.Read(salt)
	salted, err := SaltPassword(mechanism, password, salt, iterations)
	if err != nil {
		return Credential{}, err
	}
	return NewCredential(mechanism, salted, salt, iterations)
}

// SaltPassword is RFC 5802's Hi(password, salt, iterations) with the
// mechanism's hash: what a client sends AlterUserScramCredentials.
func SaltPassword(mechanism, password string, salt []byte, iterations int) ([]byte, error) {
	h, err := hashOf(mechanism)
	if err != nil {
		return nil, err
	}
	if iterations < MinIterations || iterations > MaxIterations {
		return nil, fmt.Errorf("%w: %d iterations: want %d to %d", ErrInvalidCredential, iterations, MinIterations, MaxIterations)
	}
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

// Validate checks a stored credential's shape.
func (c Credential) Validate() error {
	h, err := hashOf(c.Mechanism)
	if err != nil {
		return err
	}
	switch size := h().Size(); {
	case len(c.Salt) == 0:
		return fmt.Errorf("%w: empty salt", ErrInvalidCredential)
	case c.Iterations < MinIterations || c.Iterations > MaxIterations:
		return fmt.Errorf("%w: %d iterations: want %d to %d", ErrInvalidCredential, c.Iterations, MinIterations, MaxIterations)
	case len(c.StoredKey) != size || len(c.ServerKey) != size:
		return fmt.Errorf("%w: keys of %d and %d bytes: want %d", ErrInvalidCredential, len(c.StoredKey), len(c.ServerKey), size)
	}
	return nil
}

// Check reports whether password is the one c was derived from.
func (c Credential) Check(password string) bool {
	salted, err := SaltPassword(c.Mechanism, password, c.Salt, c.Iterations)
	if err != nil {
		return false
	}
	derived, err := NewCredential(c.Mechanism, salted, c.Salt, c.Iterations)
	return err == nil && hmac.Equal(derived.StoredKey, c.StoredKey)
}

func mac(h func() hash.Hash, key []byte, text string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(text))
	return m.Sum(nil)
}
