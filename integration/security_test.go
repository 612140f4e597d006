package integration

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/stratalog/strata/tlsfiles"
	"github.com/stratalog/strata/tlsfiles/tlstest"
)

// secure is a secured deployment's credentials: the test PKI, the broker
// user (a super user, created by the brokers from their password file),
// and the admin address's bearer token.
type secure struct {
	pki            tlstest.PKI
	dir            string
	adminUser      string
	adminPassword  string
	passwordFile   string
	adminToken     string
	adminTokenFile string
}

func newSecure(t testing.TB) *secure {
	dir := t.TempDir()
	s := &secure{pki: tlstest.Write(t, dir, "127.0.0.1", "localhost"), dir: dir,
		adminUser: "broker", adminPassword: "broker-secret-" + fmt.Sprint(time.Now().UnixNano()), adminToken: "token-" + fmt.Sprint(time.Now().UnixNano())}
	s.passwordFile = s.write(t, "broker.password", s.adminPassword)
	s.adminTokenFile = s.write(t, "admin.token", s.adminToken)
	return s
}

func (s *secure) write(t testing.TB, name, content string) string {
	path := filepath.Join(s.dir, name)
	if err := os.WriteFile(path, []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// flags are a server's security flags: its one listener SASL_SSL at
// address, followers logging in as the broker user with SCRAM-SHA-512.
func (s *secure) flags(address string) []string {
	return []string{
		"--listeners", "SASL_SSL://" + address,
		"--ssl.keystore.location", s.pki.ServerKeystore,
		"--ssl.truststore.location", s.pki.CAFile,
		"--sasl.inter.broker.username", s.adminUser,
		"--sasl.inter.broker.password.file", s.passwordFile,
		"--admin.token.file", s.adminTokenFile,
	}
}

// tls is the clients' TLS configuration: the test CA.
func (s *secure) tls(t testing.TB) *tls.Config {
	cfg, err := tlsfiles.Client(tlsfiles.Files{CAFile: s.pki.CAFile}, "")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startSecureServer starts a single node with security on.
func startSecureServer(t *testing.T) (*server, *secure) {
	t.Helper()
	sec := newSecure(t)
	kafka := freePort(t)
	srv := &server{t: t, dataDir: t.TempDir(), kafka: kafka, admin: freePort(t), meta: freePort(t), extra: sec.flags(kafka), adminTLS: sec.tls(t)}
	srv.start()
	t.Cleanup(srv.stop)
	return srv, sec
}

// client connects franz-go over TLS, logging in with mechanism.
func (s *secure) client(t testing.TB, seeds []string, mechanism sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(s.tls(t)), kgo.SASL(mechanism),
		kgo.RetryTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// admin is a kadm client logged in as the broker user.
func (s *secure) admin(t testing.TB, seeds []string) *kadm.Client {
	return kadm.NewClient(s.client(t, seeds, scram.Auth{User: s.adminUser, Pass: s.adminPassword}.AsSha512Mechanism()))
}

// addUser creates a SCRAM user for both mechanisms.
func (s *secure) addUser(ctx context.Context, t testing.TB, seeds []string, user, password string) {
	t.Helper()
	res, err := s.admin(t, seeds).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: user, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: password},
		{User: user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: password},
	})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("creating user %s: %v", user, err)
	}
}

// grant creates ACLs as the broker user.
func (s *secure) grant(ctx context.Context, t testing.TB, seeds []string, b *kadm.ACLBuilder) {
	t.Helper()
	results, err := s.admin(t, seeds).CreateACLs(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Err != nil {
			t.Fatalf("creating ACL %s %s: %v", r.Name, r.Operation, r.Err)
		}
	}
}

// TestSecurityEndToEnd is franz-go over TLS with SCRAM-SHA-256 against a
// SASL_SSL listener: logins, and ACLs deciding produce, fetch, groups
// and Metadata as Kafka's do.
func TestSecurityEndToEnd(t *testing.T) {
	srv, sec := startSecureServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seeds := []string{srv.kafka}
	admin := sec.admin(t, seeds)
	for _, topic := range []string{"orders-eu", "orders-secret", "payments"} {
		if r, err := admin.CreateTopic(ctx, 1, 1, nil, topic); err != nil || r.Err != nil {
			t.Fatalf("creating %s: %v %v", topic, err, r.Err)
		}
	}
	sec.addUser(ctx, t, seeds, "alice", "alice-secret")
	alice := func(opts ...kgo.Opt) *kgo.Client {
		return sec.client(t, seeds, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(), opts...)
	}

	t.Run("a wrong password is refused", func(t *testing.T) {
		cl := sec.client(t, seeds, scram.Auth{User: "alice", Pass: "nope"}.AsSha256Mechanism(), kgo.RequestRetries(0))
		err := cl.Ping(ctx)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("ping with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	})
	t.Run("PLAIN checks the same credential", func(t *testing.T) {
		if err := sec.client(t, seeds, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()).Ping(ctx); err != nil {
			t.Fatalf("PLAIN login: %v", err)
		}
	})
	t.Run("without ACLs nothing is allowed and Metadata hides every topic", func(t *testing.T) {
		cl := alice()
		res := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders-eu", Value: []byte("x")})
		if err := res.FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("produce without Write: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		topics, err := kadm.NewClient(cl).ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if names := topics.Names(); len(names) != 0 {
			t.Fatalf("Metadata shows %v to a principal without Describe", names)
		}
	})

	// alice may write and read every orders- topic but orders-secret, and
	// use group billing.
	sec.grant(ctx, t, seeds, kadm.NewACLs().Allow("User:alice").Topics("orders-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Operations(kadm.OpWrite, kadm.OpRead))
	sec.grant(ctx, t, seeds, kadm.NewACLs().Deny("User:alice").Topics("orders-secret").ResourcePatternType(kadm.ACLPatternLiteral).
		Operations(kadm.OpRead))
	sec.grant(ctx, t, seeds, kadm.NewACLs().Allow("User:alice").Groups("billing").ResourcePatternType(kadm.ACLPatternLiteral).
		Operations(kadm.OpRead))

	t.Run("prefixed Write allows produce; deny of Read refuses fetch alone", func(t *testing.T) {
		cl := alice()
		for _, topic := range []string{"orders-eu", "orders-secret"} {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("hello " + topic)}).FirstErr(); err != nil {
				t.Fatalf("produce to %s: %v", topic, err)
			}
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "payments", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("produce to payments: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		topics, err := kadm.NewClient(cl).ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if names := topics.Names(); !slices.Equal(names, []string{"orders-eu", "orders-secret"}) {
			t.Fatalf("Metadata shows %v, want the two orders- topics (Write and Read imply Describe)", names)
		}
		ids := map[string][16]byte{}
		for _, d := range topics {
			ids[d.Topic] = d.ID
		}
		if code := fetchCode(ctx, t, cl, "orders-secret", ids["orders-secret"]); code != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("fetch from orders-secret: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
		}
		if code := fetchCode(ctx, t, cl, "orders-eu", ids["orders-eu"]); code != 0 {
			t.Fatalf("fetch from orders-eu: %v", kerr.ErrorForCode(code))
		}
	})
	t.Run("a group member needs Read on the group", func(t *testing.T) {
		consume := func(group string) error {
			cl := alice(kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders-eu"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			fetches := cl.PollRecords(ctx, 1)
			if err := fetches.Err(); err != nil {
				return err
			}
			if fetches.NumRecords() != 1 || string(fetches.Records()[0].Value) != "hello orders-eu" {
				return fmt.Errorf("consumed %d records", fetches.NumRecords())
			}
			return cl.CommitUncommittedOffsets(ctx)
		}
		if err := consume("billing"); err != nil {
			t.Fatalf("group billing: %v", err)
		}
		if err := consume("audit"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
			t.Fatalf("group audit: %v, want GROUP_AUTHORIZATION_FAILED", err)
		}
	})
	t.Run("alice cannot manage users or ACLs", func(t *testing.T) {
		results, err := kadm.NewClient(alice()).CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Clusters().Operations(kadm.OpAll))
		if err == nil && len(results) > 0 {
			err = results[0].Err
		}
		if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
			t.Fatalf("alice creating an ACL: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
		}
	})
	t.Run("the admin address needs the token", func(t *testing.T) {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: sec.tls(t)}}
		get := func(path, token string) int {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+srv.admin+path, nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if code := get("/v1/cluster/status", ""); code != http.StatusUnauthorized {
			t.Errorf("status without a token: %d, want 401", code)
		}
		if code := get("/v1/cluster/status", "wrong"); code != http.StatusUnauthorized {
			t.Errorf("status with a wrong token: %d, want 401", code)
		}
		if code := get("/v1/cluster/status", sec.adminToken); code != http.StatusOK {
			t.Errorf("status with the token: %d, want 200", code)
		}
		if code := get("/healthz", ""); code != http.StatusOK {
			t.Errorf("/healthz: %d, want 200", code)
		}
	})
	if strings.Contains(srv.log.String(), sec.adminPassword) || strings.Contains(srv.log.String(), "alice-secret") {
		t.Error("a password reached the server's log")
	}
}

// fetchCode fetches partition 0 of topic (named and by id, whichever the
// version the client picks uses) from its start and returns the
// partition's error code.
func fetchCode(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, id [16]byte) int16 {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes = -1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}
