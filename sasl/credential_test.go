package sasl

import (
	"bytes"
	"errors"
	"testing"
)

// A credential derived from a client's salted password, as
// AlterUserScramCredentials delivers it, is the one FromPassword derives.
func TestNewCredentialMatchesPassword(t *testing.T) {
	for _, m := range ScramMechanisms {
		salt := []byte("0123456789abcdef")
		salted, err := SaltPassword(m, "secret", salt, MinIterations)
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewCredential(m, salted, salt, MinIterations)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if !c.Check("secret") || c.Check("Secret") || c.Check("") {
			t.Errorf("%s: Check accepts the wrong passwords or refuses the right one", m)
		}
		if bytes.Contains(c.StoredKey, salted) || bytes.Equal(c.ServerKey, salted) {
			t.Errorf("%s: the salted password is kept", m)
		}
	}
}

func TestCredentialRefusals(t *testing.T) {
	salt := []byte("salt")
	for _, tc := range []struct {
		name       string
		mechanism  string
		salted     []byte
		salt       []byte
		iterations int
	}{
		{"PLAIN is no SCRAM mechanism", Plain, []byte("x"), salt, MinIterations},
		{"too few iterations", ScramSHA256, []byte("x"), salt, MinIterations - 1},
		{"too many iterations", ScramSHA512, []byte("x"), salt, MaxIterations + 1},
		{"no salt", ScramSHA256, []byte("x"), nil, MinIterations},
		{"no salted password", ScramSHA256, nil, salt, MinIterations},
	} {
		if _, err := NewCredential(tc.mechanism, tc.salted, tc.salt, tc.iterations); !errors.Is(err, ErrInvalidCredential) {
			t.Errorf("%s: %v, want ErrInvalidCredential", tc.name, err)
		}
	}
	if _, err := FromPassword(ScramSHA256, "", MinIterations); !errors.Is(err, ErrInvalidCredential) {
		t.Errorf("empty password: %v", err)
	}
	good, _ := FromPassword(ScramSHA256, "pw", MinIterations)
	short := good
	short.StoredKey = short.StoredKey[:4]
	if err := short.Validate(); !errors.Is(err, ErrInvalidCredential) {
		t.Errorf("short key: %v", err)
	}
}
