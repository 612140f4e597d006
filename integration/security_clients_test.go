package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	xdgscram "github.com/xdg-go/scram"
)

// The clients users have (kcat, kafkajs, sarama) against a SASL_SSL
// listener: each test generates its PKI (tlstest, through
// startSecureServer), creates its own SCRAM user allowed exactly what a
// producer and a group consumer need (Write and Read on its topic, Read
// on its group), produces and consumes in a group with that client, and
// checks the records, the group's committed offsets and that the user's
// password never reached the server's log.

// securedTopic is a secured single node with one topic, and a user
// allowed to write and read the topic and to consume it in group.
type securedTopic struct {
	srv                          *server
	sec                          *secure
	seeds                        []string
	topic, group, user, password string
}

// startSecuredTopic starts a secured node, creates a topic of partitions
// named after name, and creates user name-user with a random password and
// its ACLs, all as the broker user.
func startSecuredTopic(t *testing.T, name string, partitions int32) *securedTopic {
	t.Helper()
	srv, sec := startSecureServer(t)
	s := &securedTopic{srv: srv, sec: sec, seeds: []string{srv.kafka},
		topic: name, group: name + "-group", user: name + "-user", password: randomPassword(t)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r, err := sec.admin(t, s.seeds).CreateTopic(ctx, partitions, 1, nil, s.topic); err != nil || r.Err != nil {
		t.Fatalf("creating %s: %v %v", s.topic, err, r.Err)
	}
	sec.addUser(ctx, t, s.seeds, s.user, s.password)
	principal := "User:" + s.user
	sec.grant(ctx, t, s.seeds, kadm.NewACLs().Allow(principal).Topics(s.topic).ResourcePatternType(kadm.ACLPatternLiteral).
		Operations(kadm.OpWrite, kadm.OpRead))
	sec.grant(ctx, t, s.seeds, kadm.NewACLs().Allow(principal).Groups(s.group).ResourcePatternType(kadm.ACLPatternLiteral).
		Operations(kadm.OpRead))
	return s
}

// randomPassword is a password no log line contains by chance.
func randomPassword(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "pw-" + hex.EncodeToString(b)
}

// checkCommitted fails the test unless the group's committed offsets on
// the topic add up to want, read as the broker user.
func (s *securedTopic) checkCommitted(t *testing.T, want int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fetched, err := s.sec.admin(t, s.seeds).FetchOffsets(ctx, s.group)
	if err == nil {
		err = fetched.Error()
	}
	if err != nil {
		t.Fatalf("fetching %s's offsets: %v", s.group, err)
	}
	var committed int64
	fetched.Each(func(o kadm.OffsetResponse) {
		if o.Topic == s.topic {
			committed += o.At
		}
	})
	if committed != want {
		t.Fatalf("group %s committed offsets adding up to %d, want %d", s.group, committed, want)
	}
}

// checkNoPassword fails the test if any of passwords is in the server's
// log (which is at debug level).
func (s *securedTopic) checkNoPassword(t *testing.T, passwords ...string) {
	t.Helper()
	log := s.srv.log.String()
	for _, p := range append([]string{s.password}, passwords...) {
		if strings.Contains(log, p) {
			t.Errorf("a password of %s reached the server's log", s.user)
		}
	}
}

// checkSameByKey fails the test unless consumed holds each key of produced
// exactly once, with its value, at offsets dense from 0 in each partition:
// for clients that do not report where each record was written.
func checkSameByKey(t *testing.T, produced map[string]string, consumed []testRecord) {
	t.Helper()
	if len(consumed) != len(produced) {
		t.Fatalf("consumed %d records, produced %d", len(consumed), len(produced))
	}
	seen := map[string]bool{}
	offsets := map[int32][]int64{}
	for _, r := range consumed {
		want, ok := produced[string(r.key)]
		if !ok || seen[string(r.key)] {
			t.Fatalf("partition %d offset %d: key %q was not produced once", r.partition, r.offset, r.key)
		}
		seen[string(r.key)] = true
		if string(r.value) != want {
			t.Fatalf("partition %d offset %d, key %q: value %q, produced %q", r.partition, r.offset, r.key, r.value, want)
		}
		offsets[r.partition] = append(offsets[r.partition], r.offset)
	}
	for p, list := range offsets {
		slices.Sort(list)
		for i, o := range list {
			if o != int64(i) {
				t.Fatalf("partition %d: offsets %v are not dense from 0", p, list)
			}
		}
	}
}

// TestSecuredKcat: kcat (librdkafka) logs in with SCRAM-SHA-512 over TLS
// trusting the test CA, produces 300 keyed records with acks=all, and
// consumes them all in a consumer group, which commits on close; kcat
// with a wrong password fails within its metadata timeout.
func TestSecuredKcat(t *testing.T) {
	t.Parallel()
	requireSecureKcat(t)
	s := startSecuredTopic(t, "secured-kcat", 3)
	config := func(name, password string) string {
		return s.sec.write(t, name, strings.Join([]string{
			"security.protocol=SASL_SSL",
			"sasl.mechanisms=SCRAM-SHA-512",
			"sasl.username=" + s.user,
			"sasl.password=" + password,
			"ssl.ca.location=" + s.sec.pki.CAFile,
		}, "\n"))
	}
	good := config("kcat.properties", s.password) // -F keeps the password out of argv

	const count = 300
	rng := mathrand.New(mathrand.NewPCG(5, 6))
	produced := map[string]string{}
	var input strings.Builder
	for i := range count {
		key, value := fmt.Sprintf("k%d-%s", i, printable(rng, rng.IntN(12))), printable(rng, 1+rng.IntN(1500))
		produced[key] = value
		fmt.Fprintf(&input, "%s|%s\n", key, value)
	}
	if _, stderr, err := runKcat(t, time.Minute, input.String(), "-F", good, "-b", s.srv.kafka, "-X", "acks=all",
		"-P", "-t", s.topic, "-K", "|"); err != nil {
		t.Fatalf("kcat -P: %v\n%s\nserver log:\n%s", err, stderr, s.srv.log)
	}

	// -e exits once every assigned partition is at its end; the consumer
	// commits what it read when it closes.
	stdout, stderr, err := runKcat(t, time.Minute, "", "-F", good, "-b", s.srv.kafka, "-G", s.group, "-J", "-q", "-e",
		"-X", "auto.offset.reset=earliest", s.topic)
	if err != nil {
		t.Fatalf("kcat -G: %v\n%s\nserver log:\n%s", err, stderr, s.srv.log)
	}
	var consumed []testRecord
	lines := bufio.NewScanner(strings.NewReader(stdout))
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var m kcatMessage
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("kcat -G -J line %q: %v", lines.Text(), err)
		}
		if m.Key == nil || m.Payload == nil {
			t.Fatalf("kcat consumed partition %d offset %d without a key or value", m.Partition, m.Offset)
		}
		consumed = append(consumed, testRecord{partition: m.Partition, offset: m.Offset, key: []byte(*m.Key), value: []byte(*m.Payload)})
	}
	checkSameByKey(t, produced, consumed)
	s.checkCommitted(t, count)

	// A wrong password: the broker refuses the login and kcat gives up
	// when its metadata timeout (-m) runs out.
	wrong := randomPassword(t)
	started := time.Now()
	_, stderr, err = runKcat(t, 30*time.Second, "", "-F", config("kcat-wrong.properties", wrong), "-b", s.srv.kafka, "-L", "-m", "5")
	if err == nil {
		t.Fatalf("kcat -L with a wrong password succeeded:\n%s", stderr)
	}
	if !strings.Contains(stderr, "Authentication failed") && !strings.Contains(stderr, "SASL authentication error") {
		t.Fatalf("kcat -L with a wrong password: %v, and no authentication error in its output:\n%s", err, stderr)
	}
	t.Logf("kcat with a wrong password failed after %v: %v", time.Since(started).Round(time.Millisecond), err)
	s.checkNoPassword(t, wrong)
}

// requireSecureKcat skips the test unless kcat is installed with TLS and
// SCRAM (Debian's is).
func requireSecureKcat(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat is not installed (make test installs it through scripts/test-deps)")
	}
	out, _ := exec.Command("kcat", "-V").CombinedOutput()
	_, features, _ := strings.Cut(string(out), "builtin.features=")
	features, _, _ = strings.Cut(features, ")")
	list := strings.Split(strings.TrimSpace(features), ",")
	if !slices.Contains(list, "ssl") || !slices.Contains(list, "sasl_scram") {
		t.Skipf("this kcat's librdkafka lacks ssl or sasl_scram (builtin.features=%s); Debian's kcat has both", features)
	}
}

// runKcat runs kcat with args and stdin for at most timeout, returning
// its standard output and error output.
func runKcat(t *testing.T, timeout time.Duration, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("killed after %v: %w", timeout, err)
	}
	return stdout.String(), stderr.String(), err
}

// TestSecuredKafkajs: kafkajs logs in with SASL PLAIN over TLS trusting the
// test CA (testdata/kafkajs_secured.js, the password in its environment),
// its idempotent producer writes the 300 records the test hands it, and a
// consumer group reads them back and commits.
func TestSecuredKafkajs(t *testing.T) {
	t.Parallel()
	modules := kafkajsInstalled(t)
	s := startSecuredTopic(t, "secured-kafkajs", 3)

	const count = 300
	type record struct {
		Key       string `json:"key"`
		Value     string `json:"value"`
		Partition int32  `json:"partition,omitempty"`
		Offset    int64  `json:"offset,omitempty"`
	}
	produced := map[string]string{}
	var records []record
	for i := range count {
		r := record{Key: fmt.Sprintf("k%d", i), Value: strings.Repeat(fmt.Sprintf("secured %d ü ✓ ", i), 1+i%5)}
		produced[r.Key] = r.Value
		records = append(records, r)
	}
	input, err := json.Marshal(records)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "testdata/kafkajs_secured.js", s.srv.kafka, s.topic, s.group, s.sec.pki.CAFile, s.user)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "KAFKAJS_NO_PARTITIONER_WARNING=1", "KAFKAJS_PASSWORD="+s.password)
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kafkajs: %v\n%s\nserver log:\n%s", err, stderr.String(), s.srv.log)
	}
	var consumedJS []record
	if err := json.Unmarshal(stdout.Bytes(), &consumedJS); err != nil {
		t.Fatalf("kafkajs printed %q: %v", stdout.String(), err)
	}
	consumed := make([]testRecord, len(consumedJS))
	for i, r := range consumedJS {
		consumed[i] = testRecord{partition: r.Partition, offset: r.Offset, key: []byte(r.Key), value: []byte(r.Value)}
	}
	checkSameByKey(t, produced, consumed)
	s.checkCommitted(t, count)
	s.checkNoPassword(t)
}

// TestSecuredSarama: sarama logs in with SCRAM-SHA-256 (the SCRAM client
// built on github.com/xdg-go/scram, SaslHandshake v1 then
// SaslAuthenticate) over TLS trusting the test CA; its idempotent sync
// producer writes 300 records, and a consumer group reads them back and
// commits.
func TestSecuredSarama(t *testing.T) {
	t.Parallel()
	s := startSecuredTopic(t, "secured-sarama", 3)
	cfg := saramaConfig()
	cfg.Net.TLS.Enable = true
	cfg.Net.TLS.Config = s.sec.tls(t)
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Version = sarama.SASLHandshakeV1
	cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
	cfg.Net.SASL.User, cfg.Net.SASL.Password = s.user, s.password
	cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: xdgscram.SHA256} }

	const count = 300
	producer, err := sarama.NewSyncProducer(s.seeds, cfg)
	if err != nil {
		t.Fatalf("sarama producer: %v\nserver log:\n%s", err, s.srv.log)
	}
	messages := make([]*sarama.ProducerMessage, count)
	for i := range messages {
		messages[i] = &sarama.ProducerMessage{Topic: s.topic, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.ByteEncoder(saramaValue(i))}
	}
	if err := producer.SendMessages(messages); err != nil {
		t.Fatalf("sarama SendMessages: %v", err)
	}
	if err := producer.Close(); err != nil {
		t.Fatal(err)
	}
	produced := make([]testRecord, count)
	for i, m := range messages { // SendMessages set each one's partition and offset
		produced[i] = testRecord{partition: m.Partition, offset: m.Offset, key: fmt.Appendf(nil, "k%d", i), value: saramaValue(i)}
	}

	group, err := sarama.NewConsumerGroup(s.seeds, s.group, cfg)
	if err != nil {
		t.Fatalf("sarama consumer group: %v", err)
	}
	handler := &saramaCollector{want: count, done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	consuming := make(chan error, 1)
	go func() { // owned by the test, stopped by cancel
		for ctx.Err() == nil {
			if err := group.Consume(ctx, []string{s.topic}, handler); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				consuming <- err
				return
			}
		}
		consuming <- nil
	}()
	select {
	case <-handler.done:
	case err := <-consuming:
		t.Fatalf("sarama Consume: %v", err)
	case <-ctx.Done():
		t.Fatalf("sarama consumed %d of %d records in a minute:\n%s", handler.consumed(), count, s.srv.log)
	}
	cancel()
	if err := <-consuming; err != nil {
		t.Fatalf("sarama Consume: %v", err)
	}
	if err := group.Close(); err != nil { // commits the marked offsets
		t.Fatalf("sarama consumer group close: %v", err)
	}
	consumed := make([]testRecord, 0, count)
	for i := range count {
		m, ok := handler.get(fmt.Sprintf("k%d", i))
		if !ok {
			t.Fatalf("sarama did not consume k%d", i)
		}
		consumed = append(consumed, testRecord{partition: m.Partition, offset: m.Offset, key: m.Key, value: m.Value})
	}
	checkSameRecords(t, produced, consumed)
	s.checkCommitted(t, count)
	s.checkNoPassword(t)
}

// saramaSCRAM is sarama's SCRAM client on github.com/xdg-go/scram: one
// conversation per login, with the hash of the mechanism.
type saramaSCRAM struct {
	hash         xdgscram.HashGeneratorFcn
	conversation *xdgscram.ClientConversation
}

func (c *saramaSCRAM) Begin(user, password, authzID string) error {
	client, err := c.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	c.conversation = client.NewConversation()
	return nil
}

func (c *saramaSCRAM) Step(challenge string) (string, error) { return c.conversation.Step(challenge) }

func (c *saramaSCRAM) Done() bool { return c.conversation.Done() }
