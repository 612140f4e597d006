package sasl

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/xdg-go/scram"
)

// ErrAuthenticationFailed is every failed exchange: a wrong password, an
// unknown user, a malformed message. Its text is what the client is told.
var ErrAuthenticationFailed = errors.New("authentication failed: invalid credentials")

// ErrUnsupportedMechanism is a mechanism the package does not serve.
var ErrUnsupportedMechanism = errors.New("sasl: unsupported mechanism")

// Credentials finds users' SCRAM credentials; the metadata state is one.
type Credentials interface {
	ScramCredential(user, mechanism string) (Credential, bool)
}

// Exchange is one authentication in progress: the client's tokens go to
// Step until Done.
type Exchange struct {
	mechanism string
	creds     Credentials
	scram     *scram.ServerConversation
	user      string
	done      bool
	// The SCRAM exchange's first round and the credential it used, for
	// repeatedNonceFinal: the client-first message, the server-first
	// answer, and the stored (or decoy) credential.
	clientFirst, serverFirst string
	credential               Credential
}

// Start begins an exchange of mechanism against creds.
func Start(mechanism string, creds Credentials) (*Exchange, error) {
	e := &Exchange{mechanism: mechanism, creds: creds}
	switch mechanism {
	case Plain:
		return e, nil
	case ScramSHA256, ScramSHA512:
		generator := scram.SHA256
		if mechanism == ScramSHA512 {
			generator = scram.SHA512
		}
		server, err := generator.NewServer(func(user string) (scram.StoredCredentials, error) {
			c, ok := creds.ScramCredential(user, mechanism)
			if !ok {
				c = decoy(user, mechanism)
			}
			e.credential = c
			return scram.StoredCredentials{
				KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: c.Iterations},
				StoredKey:  c.StoredKey,
				ServerKey:  c.ServerKey,
			}, nil
		})
		if err != nil {
			return nil, err
		}
		e.scram = server.NewConversation()
		return e, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnsupportedMechanism, mechanism)
}

// Step takes the client's next token and returns the answer to send. An
// error wraps ErrAuthenticationFailed and ends the exchange; the response
// is then nil, since nothing of why may reach the client.
func (e *Exchange) Step(token []byte) ([]byte, error) {
	if e.done {
		return nil, fmt.Errorf("%w: the exchange is over", ErrAuthenticationFailed)
	}
	if e.scram == nil {
		e.done = true
		user, err := e.plain(token)
		if err != nil {
			return nil, err
		}
		e.user = user
		return nil, nil
	}
	if e.serverFirst != "" {
		if nonce, ok := repeatedNonce(string(token), e.serverFirst); ok {
			return e.repeatedNonceFinal(string(token), nonce)
		}
	}
	response, err := e.scram.Step(string(token))
	if e.clientFirst == "" {
		e.clientFirst, e.serverFirst = string(token), response
	}
	if err != nil {
		e.done = true
		return nil, fmt.Errorf("%w: %v", ErrAuthenticationFailed, err)
	}
	if e.scram.Done() {
		e.done = true
		if !e.scram.Valid() {
			return nil, ErrAuthenticationFailed
		}
		if authz := e.scram.AuthzID(); authz != "" && authz != e.scram.Username() {
			return nil, fmt.Errorf("%w: authorization id %q is not the user", ErrAuthenticationFailed, authz)
		}
		e.user = e.scram.Username()
	}
	return []byte(response), nil
}

// plain checks a PLAIN message, authzid NUL authcid NUL password (RFC
// 4616), against the user's SCRAM credential, SHA-512's first.
func (e *Exchange) plain(token []byte) (string, error) {
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 || len(parts[1]) == 0 || len(parts[2]) == 0 {
		return "", fmt.Errorf("%w: malformed PLAIN message", ErrAuthenticationFailed)
	}
	authz, user, password := string(parts[0]), string(parts[1]), string(parts[2])
	if authz != "" && authz != user {
		return "", fmt.Errorf("%w: authorization id %q is not the user", ErrAuthenticationFailed, authz)
	}
	if !CheckPassword(e.creds, user, password) {
		return "", ErrAuthenticationFailed
	}
	return user, nil
}

// CheckPassword reports whether password is user's, by the user's SCRAM
// credential (SHA-512's if the user has both), as PLAIN and HTTP Basic
// logins check it. An unknown user costs the time a wrong password does.
func CheckPassword(creds Credentials, user, password string) bool {
	_, ok := VerifyPassword(creds, user, password)
	return ok
}

// VerifyPassword is CheckPassword, also returning the credential the
// password matched.
func VerifyPassword(creds Credentials, user, password string) (Credential, bool) {
	for _, m := range []string{ScramSHA512, ScramSHA256} {
		if c, ok := creds.ScramCredential(user, m); ok {
			return c, c.Check(password)
		}
	}
	decoy(user, ScramSHA512).Check(password) // as slow as a wrong password
	return Credential{}, false
}

// Done reports whether the exchange is over.
func (e *Exchange) Done() bool { return e.done }

// User is the authenticated user once Done without error.
func (e *Exchange) User() string { return e.user }

// Mechanism is the exchange's mechanism.
func (e *Exchange) Mechanism() string { return e.mechanism }

// decoySecret keys the decoy credentials of this process.
var decoySecret = func() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}()

// decoy is the made-up credential an unknown user is challenged with:
// the same salt for the same name for the life of the process, as a real
// credential's would be, and keys nobody can answer.
func decoy(user, mechanism string) Credential {
	derive := func(label string, n int) []byte {
		m := hmac.New(sha512.New, decoySecret)
		m.Write([]byte(label + "\x00" + mechanism + "\x00" + user))
		return m.Sum(nil)[:n]
	}
	h, _ := hashOf(mechanism)
	size := h().Size()
	return Credential{
		Mechanism: mechanism, Salt: derive("salt", 24), Iterations: DefaultIterations,
		StoredKey: derive("stored", size), ServerKey: derive("server", size),
	}
}

// repeatedNonce reports whether a client-final message carries the nonce
// librdkafka before 2.6.1 sends (confluentinc/librdkafka#4895): its own
// nonce again in front of the combined one the server sent, where RFC 5802
// wants the combined nonce alone. It returns the combined nonce.
func repeatedNonce(clientFinal, serverFirst string) (string, bool) {
	nonce, ok := attribute(serverFirst, 'r')
	if !ok {
		return "", false
	}
	sent, ok := attribute(clientFinal, 'r')
	return nonce, ok && sent != nonce && strings.HasSuffix(sent, nonce)
}

// repeatedNonceFinal is the final SCRAM step for a client-final message
// whose nonce ends with the combined one, as Kafka 3.8.1 to 3.9 accept it
// (they compare with endsWith), so that the librdkafka clients in the
// field, Debian 12's kcat among them, can log in. The replay protection is
// intact: the proof is checked over the message as the client sent it,
// and that AuthMessage holds the server-first message with this
// exchange's fresh server nonce. xdg-go/scram compares nonces exactly, so
// this one step is checked here, as RFC 5802 section 3 computes it.
func (e *Exchange) repeatedNonceFinal(clientFinal, nonce string) ([]byte, error) {
	e.done = true
	h, err := hashOf(e.mechanism)
	if err != nil {
		return nil, err
	}
	cut := strings.LastIndex(clientFinal, ",p=")
	gs2, bare, ok := strings.Cut(e.clientFirst, ",")
	if ok {
		var authz string
		authz, bare, ok = strings.Cut(bare, ",")
		gs2 += "," + authz + ","
	}
	if cut < 0 || !ok || gs2[0] == 'p' {
		return nil, fmt.Errorf("%w: malformed SCRAM messages", ErrAuthenticationFailed)
	}
	withoutProof := clientFinal[:cut]
	proof, err := base64.StdEncoding.DecodeString(clientFinal[cut+len(",p="):])
	binding, _ := attribute(withoutProof, 'c')
	if err != nil || binding != base64.StdEncoding.EncodeToString([]byte(gs2)) {
		return nil, fmt.Errorf("%w: malformed client-final message", ErrAuthenticationFailed)
	}
	authMessage := bare + "," + e.serverFirst + "," + withoutProof
	signature := mac(h, e.credential.StoredKey, authMessage)
	if len(proof) != len(signature) {
		return nil, ErrAuthenticationFailed
	}
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ signature[i]
	}
	stored := h()
	stored.Write(clientKey)
	if !hmac.Equal(stored.Sum(nil), e.credential.StoredKey) {
		return nil, ErrAuthenticationFailed
	}
	if authz := e.scram.AuthzID(); authz != "" && authz != e.scram.Username() {
		return nil, fmt.Errorf("%w: authorization id %q is not the user", ErrAuthenticationFailed, authz)
	}
	e.user = e.scram.Username()
	return []byte("v=" + base64.StdEncoding.EncodeToString(mac(h, e.credential.ServerKey, authMessage))), nil
}

// attribute is the value of a SCRAM message's attribute name ("r=...").
func attribute(message string, name byte) (string, bool) {
	for _, field := range strings.Split(message, ",") {
		if len(field) >= 2 && field[0] == name && field[1] == '=' {
			return field[2:], true
		}
	}
	return "", false
}
