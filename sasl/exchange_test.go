package sasl

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/xdg-go/scram"
)

// users is a Credentials of SCRAM credentials made from passwords.
type users map[string]map[string]Credential

func (u users) ScramCredential(user, mechanism string) (Credential, bool) {
	c, ok := u[user][mechanism]
	return c, ok
}

func newUsers(t testing.TB, passwords map[string]string) users {
	t.Helper()
	u := users{}
	for user, password := range passwords {
		u[user] = map[string]Credential{}
		for _, m := range ScramMechanisms {
			c, err := FromPassword(m, password, MinIterations)
			if err != nil {
				t.Fatal(err)
			}
			u[user][m] = c
		}
	}
	return u
}

// converse runs a SCRAM client (xdg-go/scram's, as sarama uses) against an
// exchange and returns the exchange's error, if any.
func converse(t *testing.T, creds Credentials, mechanism, user, password string) (*Exchange, error) {
	t.Helper()
	generator := scram.SHA256
	if mechanism == ScramSHA512 {
		generator = scram.SHA512
	}
	client, err := generator.NewClient(user, password, "")
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	e, err := Start(mechanism, creds)
	if err != nil {
		t.Fatal(err)
	}
	var fromServer string
	for i := 0; ; i++ {
		toServer, err := conv.Step(fromServer)
		if err != nil {
			t.Fatalf("client step %d: %v", i, err)
		}
		if conv.Done() {
			if !e.Done() {
				t.Fatal("client done before the server")
			}
			return e, nil
		}
		response, err := e.Step([]byte(toServer))
		if err != nil {
			if response != nil {
				t.Errorf("a failed step answered %q", response)
			}
			return e, err
		}
		fromServer = string(response)
	}
}

func TestScram(t *testing.T) {
	u := newUsers(t, map[string]string{"alice": "alice-secret", "bob": "bob-secret"})
	for _, m := range ScramMechanisms {
		t.Run(m, func(t *testing.T) {
			e, err := converse(t, u, m, "alice", "alice-secret")
			if err != nil {
				t.Fatalf("right password: %v", err)
			}
			if e.User() != "alice" {
				t.Errorf("user %q, want alice", e.User())
			}
			for _, bad := range []struct{ user, password string }{
				{"alice", "bob-secret"},
				{"carol", "alice-secret"}, // unknown: refused at the proof, like a wrong password
			} {
				e, err := converse(t, u, m, bad.user, bad.password)
				if !errors.Is(err, ErrAuthenticationFailed) {
					t.Errorf("%s with %q: %v, want ErrAuthenticationFailed", bad.user, bad.password, err)
				}
				if e.User() != "" {
					t.Errorf("failed exchange named user %q", e.User())
				}
			}
		})
	}
}

// An unknown user is offered the same salt every time, as a known one is.
func TestScramDecoyIsStable(t *testing.T) {
	u := newUsers(t, nil)
	first := func() string {
		e, err := Start(ScramSHA256, u)
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Step([]byte("n,,n=nobody,r=fyko+d2lbbFgONRv9qkxdawL"))
		if err != nil {
			t.Fatalf("first step of an unknown user failed at once: %v", err)
		}
		return string(out)[len("r=fyko+d2lbbFgONRv9qkxdawL"):]
	}
	a, b := first(), first()
	saltOf := func(s string) string {
		for i := 0; i+2 < len(s); i++ {
			if s[i:i+3] == ",s=" {
				return s[i:]
			}
		}
		return ""
	}
	if saltOf(a) == "" || saltOf(a) != saltOf(b) {
		t.Errorf("decoy salt changes between attempts: %q, %q", a, b)
	}
}

func TestPlain(t *testing.T) {
	u := newUsers(t, map[string]string{"alice": "alice-secret"})
	for _, tc := range []struct {
		name, token, user string
	}{
		{"right", "\x00alice\x00alice-secret", "alice"},
		{"authzid is the user", "alice\x00alice\x00alice-secret", "alice"},
		{"wrong password", "\x00alice\x00nope", ""},
		{"unknown user", "\x00carol\x00alice-secret", ""},
		{"authzid of another", "bob\x00alice\x00alice-secret", ""},
		{"no password", "\x00alice\x00", ""},
		{"no user", "\x00\x00alice-secret", ""},
		{"two parts", "alice\x00alice-secret", ""},
		{"four parts", "\x00alice\x00alice-secret\x00", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Start(Plain, u)
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.Step([]byte(tc.token))
			if !e.Done() || out != nil {
				t.Fatalf("PLAIN is one step with an empty answer: done %v, answer %q", e.Done(), out)
			}
			if tc.user == "" {
				if !errors.Is(err, ErrAuthenticationFailed) {
					t.Fatalf("%v, want ErrAuthenticationFailed", err)
				}
				return
			}
			if err != nil || e.User() != tc.user {
				t.Fatalf("user %q, err %v; want %q", e.User(), err, tc.user)
			}
			if _, err := e.Step([]byte(tc.token)); err == nil {
				t.Error("a finished exchange took another step")
			}
		})
	}
}

// PLAIN checks against SCRAM-SHA-256 when that is the only credential.
func TestPlainWithOnlySHA256(t *testing.T) {
	c, err := FromPassword(ScramSHA256, "pw", MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	u := users{"dave": {ScramSHA256: c}}
	e, _ := Start(Plain, u)
	if _, err := e.Step([]byte("\x00dave\x00pw")); err != nil {
		t.Fatal(err)
	}
}

func TestStartRefusesUnknownMechanism(t *testing.T) {
	for _, m := range []string{"GSSAPI", "OAUTHBEARER", "scram-sha-256", ""} {
		if _, err := Start(m, users{}); !errors.Is(err, ErrUnsupportedMechanism) {
			t.Errorf("%q: %v, want ErrUnsupportedMechanism", m, err)
		}
	}
}

// librdkafka before 2.6.1 sends its own nonce again in front of the
// combined one; the exchange takes it, as Kafka 3.8.1 to 3.9 do, checking
// the proof over the message as sent, and still refuses a wrong password,
// a nonce that does not end with the server's, and a bad channel binding.
func TestScramRepeatedNonce(t *testing.T) {
	u := newUsers(t, map[string]string{"alice": "alice-secret"})
	for _, m := range ScramMechanisms {
		h, _ := hashOf(m)
		final := func(password string, nonce func(client, combined string) string, binding string) (*Exchange, []byte, []byte, error) {
			e, err := Start(m, u)
			if err != nil {
				t.Fatal(err)
			}
			clientNonce := "rOprNGfwEbeRWgbNEkqO"
			first := "n,,n=alice,r=" + clientNonce
			serverFirst, err := e.Step([]byte(first))
			if err != nil {
				t.Fatal(err)
			}
			combined, _ := attribute(string(serverFirst), 'r')
			saltText, _ := attribute(string(serverFirst), 's')
			salt, _ := base64.StdEncoding.DecodeString(saltText)
			salted, err := SaltPassword(m, password, salt, MinIterations)
			if err != nil {
				t.Fatal(err)
			}
			withoutProof := "c=" + binding + ",r=" + nonce(clientNonce, combined)
			authMessage := "n=alice,r=" + clientNonce + "," + string(serverFirst) + "," + withoutProof
			clientKey := mac(h, salted, "Client Key")
			stored := h()
			stored.Write(clientKey)
			signature := mac(h, stored.Sum(nil), authMessage)
			proof := make([]byte, len(clientKey))
			for i := range proof {
				proof[i] = clientKey[i] ^ signature[i]
			}
			answer, err := e.Step([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)))
			serverSignature := mac(h, mac(h, salted, "Server Key"), authMessage)
			return e, answer, serverSignature, err
		}
		repeated := func(client, combined string) string { return client + combined }
		e, answer, want, err := final("alice-secret", repeated, "biws")
		if err != nil || e.User() != "alice" {
			t.Fatalf("%s, librdkafka's repeated nonce: %v, user %q", m, err, e.User())
		}
		if string(answer) != "v="+base64.StdEncoding.EncodeToString(want) {
			t.Fatalf("%s: server signature %q", m, answer)
		}
		for name, bad := range map[string]struct {
			password string
			nonce    func(string, string) string
			binding  string
		}{
			"wrong password":           {"nope", repeated, "biws"},
			"a nonce not the server's": {"alice-secret", func(c, combined string) string { return c + combined + "x" }, "biws"},
			"another channel binding":  {"alice-secret", repeated, "eSws"},
		} {
			if e, _, _, err := final(bad.password, bad.nonce, bad.binding); !errors.Is(err, ErrAuthenticationFailed) || e.User() != "" {
				t.Errorf("%s, %s: %v, user %q; want ErrAuthenticationFailed", m, name, err, e.User())
			}
		}
	}
}
