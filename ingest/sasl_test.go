package ingest

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/sasl"
	"github.com/stratalog/strata/tlsfiles"
	"github.com/stratalog/strata/tlsfiles/tlstest"
)

// newSASLBroker is a broker whose one listener is SASL_PLAINTEXT, with
// user alice (password alice-secret) and the configuration tweaks given.
func newSASLBroker(t testing.TB, configure func(*Config)) *Broker {
	b := newTestBroker(t, func(c *Config) {
		c.Listeners[0].Protocol = SASLPlaintext
		c.Security.FailedAuthDelay = 0
		if configure != nil {
			configure(c)
		}
	})
	var creds []sasl.Credential
	for _, m := range sasl.ScramMechanisms {
		c, err := sasl.FromPassword(m, "alice-secret", sasl.MinIterations)
		if err != nil {
			t.Fatal(err)
		}
		creds = append(creds, c)
	}
	if _, err := b.meta.Propose(context.Background(), &meta.AlterScramCredential{User: "alice", Upsert: creds}); err != nil {
		t.Fatal(err)
	}
	return b
}

// plainLogin shakes hands and sends one PLAIN token; it returns the
// SaslAuthenticate answer.
func plainLogin(c *testClient, user, password string) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = sasl.Plain
	if resp := c.request(hs, 1).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
		c.t.Fatalf("handshake: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("\x00" + user + "\x00" + password)
	return c.request(auth, 1).(*kmsg.SASLAuthenticateResponse)
}

// closedByBroker reports whether the broker closed c's connection: the
// next read ends.
func closedByBroker(t *testing.T, c *testClient) bool {
	t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := readResponseFrame(c.conn)
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, net.ErrClosed)
}

// send writes req without waiting for an answer.
func send(t *testing.T, c *testClient, req kmsg.Request, version int16) {
	t.Helper()
	req.SetVersion(version)
	c.next++
	if _, err := c.conn.Write(encodeRequest(req, c.next)); err != nil {
		t.Fatal(err)
	}
}

func TestSASLAuthentication(t *testing.T) {
	b := newSASLBroker(t, nil)

	t.Run("ApiVersions before authentication is answered", func(t *testing.T) {
		c := connect(t, b)
		if resp := c.request(kmsg.NewPtrApiVersionsRequest(), 2).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
		}
	})
	t.Run("any other request before authentication closes the connection", func(t *testing.T) {
		for _, req := range []kmsg.Request{kmsg.NewPtrMetadataRequest(), kmsg.NewPtrDescribeClusterRequest(), kmsg.NewPtrListGroupsRequest()} {
			c := connect(t, b)
			send(t, c, req, 0)
			if !closedByBroker(t, c) {
				t.Errorf("%s before authentication was answered", kmsg.NameForKey(req.Key()))
			}
		}
	})
	t.Run("a wrong password is refused and the connection closed", func(t *testing.T) {
		c := connect(t, b)
		resp := plainLogin(c, "alice", "wrong")
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("%v, want SASL_AUTHENTICATION_FAILED", kerr.ErrorForCode(resp.ErrorCode))
		}
		if !closedByBroker(t, c) {
			t.Fatal("the connection stayed open after a failed login")
		}
	})
	t.Run("an unknown user is refused alike", func(t *testing.T) {
		c := connect(t, b)
		if resp := plainLogin(c, "mallory", "alice-secret"); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("%v, want SASL_AUTHENTICATION_FAILED", kerr.ErrorForCode(resp.ErrorCode))
		}
	})
	t.Run("a mechanism not enabled is refused and the connection closed", func(t *testing.T) {
		c := connect(t, b)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = "GSSAPI"
		resp := c.request(hs, 1).(*kmsg.SASLHandshakeResponse)
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(resp.SupportedMechanisms) != len(sasl.Mechanisms) {
			t.Fatalf("%v, mechanisms %v", kerr.ErrorForCode(resp.ErrorCode), resp.SupportedMechanisms)
		}
		if !closedByBroker(t, c) {
			t.Fatal("the connection stayed open")
		}
	})
	t.Run("the right password authenticates the connection", func(t *testing.T) {
		c := connect(t, b)
		if resp := plainLogin(c, "alice", "alice-secret"); resp.ErrorCode != 0 {
			t.Fatalf("login: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
		}
		if resp := c.request(kmsg.NewPtrMetadataRequest(), 12).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
			t.Fatalf("metadata after login: %+v", resp.Brokers)
		}
	})
	t.Run("a large frame before authentication closes the connection", func(t *testing.T) {
		c := connect(t, b)
		frame := make([]byte, 4+600<<10)
		frame[1], frame[2] = 0x09, 0x60 // 600 KiB, past sasl.server.max.receive.size
		go c.conn.Write(frame)
		if !closedByBroker(t, c) {
			t.Fatal("a 600 KiB frame was read before authentication")
		}
	})
}

// KIP-368: a session ends after connections.max.reauth.ms; a client that
// logs in again on its connection carries on, one that does not is cut
// off at its next request.
func TestSASLReauthentication(t *testing.T) {
	b := newSASLBroker(t, func(c *Config) { c.Security.ReauthMax = 300 * time.Millisecond })
	c := connect(t, b)
	resp := plainLogin(c, "alice", "alice-secret")
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 300 {
		t.Fatalf("login: %v, session lifetime %d ms, want 300", kerr.ErrorForCode(resp.ErrorCode), resp.SessionLifetimeMillis)
	}
	time.Sleep(400 * time.Millisecond)
	if resp := plainLogin(c, "alice", "alice-secret"); resp.ErrorCode != 0 {
		t.Fatalf("re-authentication: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp := c.request(kmsg.NewPtrMetadataRequest(), 12).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
		t.Fatalf("metadata after re-authentication: %+v", resp.Brokers)
	}
	time.Sleep(400 * time.Millisecond)
	send(t, c, kmsg.NewPtrMetadataRequest(), 12)
	if !closedByBroker(t, c) {
		t.Fatal("an expired session was served")
	}

	other := connect(t, b)
	plainLogin(other, "alice", "alice-secret")
	if _, err := b.meta.Propose(context.Background(), &meta.AlterScramCredential{User: "bob", Upsert: []sasl.Credential{mustCredential(t, "bob-secret")}}); err != nil {
		t.Fatal(err)
	}
	if resp := plainLogin(other, "bob", "bob-secret"); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("re-authenticating as another user: %v, want SASL_AUTHENTICATION_FAILED", kerr.ErrorForCode(resp.ErrorCode))
	}
}

func mustCredential(t testing.TB, password string) sasl.Credential {
	c, err := sasl.FromPassword(sasl.ScramSHA512, password, sasl.MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Without credentials every API the broker answers, but ApiVersions and
// the SASL exchange itself, closes the connection unanswered.
func TestEveryAPINeedsAuthentication(t *testing.T) {
	b := newSASLBroker(t, nil)
	for _, a := range supportedAPIs() {
		switch a.key {
		case apiVersionsKey, saslHandshakeKey, saslAuthenticateKey:
			continue
		}
		t.Run(a.name, func(t *testing.T) {
			req := kmsg.RequestForKey(a.key)
			if d, ok := req.(interface{ Default() }); ok {
				d.Default()
			}
			c := connect(t, b)
			send(t, c, req, a.maxVersion)
			if !closedByBroker(t, c) {
				t.Fatalf("%s was answered before authentication", a.name)
			}
		})
	}
}

// An SSL listener that requires client certificates knows its clients by
// their certificates: the subject is the principal ACLs name.
func TestSSLClientCertificatePrincipal(t *testing.T) {
	pki := tlstest.Write(t, t.TempDir(), "127.0.0.1")
	server, err := tlsfiles.NewServer(tlsfiles.Files{CertFile: pki.ServerKeystore, KeyFile: pki.ServerKeystore, CAFile: pki.CAFile}, tlsfiles.ClientAuthRequested, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := newTestBroker(t, func(c *Config) {
		c.Listeners[0].Protocol, c.Listeners[0].TLS = SSL, server.Config()
		c.Security.AllowEveryoneIfNoACL = false
		c.Security.SuperUsers = []string{"User:CN=alice"}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go b.Serve(ln)
	dial := func(certFile, keyFile string) *testClient {
		cfg, err := tlsfiles.Client(tlsfiles.Files{CertFile: certFile, KeyFile: keyFile, CAFile: pki.CAFile}, "")
		if err != nil {
			t.Fatal(err)
		}
		conn, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return &testClient{t: t, conn: conn}
	}
	describe := func(c *testClient) int16 {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return c.request(req, 3).(*kmsg.DescribeACLsResponse).ErrorCode
	}
	aliceCert, aliceKey := pki.Client("alice")
	if code := describe(dial(aliceCert, aliceKey)); code != 0 {
		t.Fatalf("User:CN=alice, a super user: %v", kerr.ErrorForCode(code))
	}
	bobCert, bobKey := pki.Client("bob")
	if code := describe(dial(bobCert, bobKey)); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("User:CN=bob: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	if code := describe(dial("", "")); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("no certificate (User:ANONYMOUS): %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
}

// A user quota meters the principal's name: alice once she has logged in,
// ANONYMOUS before.
func TestQuotaUserIsThePrincipal(t *testing.T) {
	for _, tc := range []struct {
		session *session
		want    string
	}{
		{nil, "ANONYMOUS"},
		{&session{principal: anonymous}, "ANONYMOUS"},
		{&session{principal: "User:alice"}, "alice"},
		{&session{principal: "User:CN=alice,O=acme"}, "CN=alice,O=acme"},
	} {
		if got := (&request{session: tc.session}).quotaUser(); got != tc.want {
			t.Errorf("quota user of %+v: %q, want %q", tc.session, got, tc.want)
		}
	}
}

// A client may send a request far past sasl.server.max.receive.size as
// soon as its login is answered, before the broker has read anything
// more: the limit that applies is the one after the login.
func TestLargeRequestRightAfterLogin(t *testing.T) {
	b := newSASLBroker(t, func(c *Config) { c.Security.MaxReceiveBeforeAuth = 1024 })
	c := connect(t, b)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = sasl.Plain
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
	big := kmsg.NewPtrCreateTopicsRequest()
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "big", 1, 1
	value := strings.Repeat("x", 64<<10)
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "cleanup.policy", &value // refused, but only once read
	topic.Configs = append(topic.Configs, cfg)
	big.Topics = append(big.Topics, topic)
	// All three at once, pipelined, as a client that does not wait (from
	// another goroutine: the pipe has no buffer, and the answers must be
	// read while the requests are written).
	frames := slices.Concat(encodeRequest(versioned(hs, 1), 1), encodeRequest(versioned(auth, 1), 2), encodeRequest(versioned(big, 7), 3))
	go c.conn.Write(frames)
	for i := range 3 {
		c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := readResponseFrame(c.conn); err != nil {
			t.Fatalf("answer %d: %v (the 64 KiB request after the login was not read)", i+1, err)
		}
	}
}

// versioned sets req's version and returns it.
func versioned(req kmsg.Request, version int16) kmsg.Request {
	req.SetVersion(version)
	return req
}

// sasl.enabled.mechanisms is honoured: a mechanism left out is refused at
// the handshake, and the answer lists only the enabled ones.
func TestEnabledMechanismsAreHonoured(t *testing.T) {
	b := newSASLBroker(t, func(c *Config) { c.Security.SASLMechanisms = []string{sasl.ScramSHA512} })
	c := connect(t, b)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = sasl.Plain
	resp := c.request(hs, 1).(*kmsg.SASLHandshakeResponse)
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || !slices.Equal(resp.SupportedMechanisms, []string{sasl.ScramSHA512}) {
		t.Fatalf("PLAIN with only SCRAM-SHA-512 enabled: %v, mechanisms %v", kerr.ErrorForCode(resp.ErrorCode), resp.SupportedMechanisms)
	}
}
