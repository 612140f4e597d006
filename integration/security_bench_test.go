package integration

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"golang.org/x/sys/unix"
)

// secureBenchMiB is how much each listener's client produces and then
// consumes per round: STRATA_BENCH_SECURE_MIB, 256 by default.
func secureBenchMiB(b *testing.B) int {
	if v := os.Getenv("STRATA_BENCH_SECURE_MIB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("STRATA_BENCH_SECURE_MIB=%q: want a number of MiB", v)
		}
		return n
	}
	return 256
}

const (
	// secureRounds is how many rounds one op of the benchmark runs: each
	// listener goes first, second and third once.
	secureRounds = 3
	// secureBenchPartitions is each topic's partition count, as in
	// BenchmarkProduce.
	secureBenchPartitions = 8
	// secureBenchACLs is how many ACLs the cluster holds.
	secureBenchACLs = 1000
	// secureBenchUser is the SASL client's user: not a super user, allowed
	// by a prefixed ACL.
	secureBenchUser, secureBenchPassword = "bench", "bench-secret"
	secureBenchPrefix                    = "secbench-"
)

// secureListener is one of the benchmark server's listeners and the
// client that uses it, with what its passes measured.
type secureListener struct {
	name   string // the metric prefix
	client *kgo.Client
	// Per phase (produce, consume): record bytes, wall time, the server's
	// CPU seconds (and of those, in user space), and this process's.
	bytes      [2]int64
	elapsed    [2]time.Duration
	serverCPU  [2]float64
	serverUser [2]float64
	clientCPU  [2]float64
	requests   [2]float64 // Produce or Fetch requests the server answered
}

const (
	secureProducePhase = iota
	secureConsumePhase
)

var (
	securePhaseNames = [2]string{"produce", "consume"}
	securePhaseAPIs  = [2]string{"Produce", "Fetch"}
)

func (l *secureListener) topic(round int) string {
	return fmt.Sprintf("%s%s-%d", secureBenchPrefix, l.name, round)
}

func (l *secureListener) rate(phase int) float64 {
	return float64(l.bytes[phase]) / l.elapsed[phase].Seconds()
}

// BenchmarkSecureProduceConsume runs the same franz-go workload over the
// three listeners of one `strata server` process: PLAINTEXT, SSL (TLS
// only) and SASL_SSL (TLS, a SCRAM-SHA-512 login, and an ACL check that
// reads the bindings on the topic's path among 1,000 ACLs). On PLAINTEXT
// and SSL the client is User:ANONYMOUS, made a super user, so their
// authorizer check is a list lookup; on SASL_SSL it is User:bench, allowed
// Write and Read by a prefixed ACL (secureBenchACLBindings). Each client
// produces STRATA_BENCH_SECURE_MIB (256) MiB of 1 KiB records to a fresh
// topic of 8 partitions (acks=1, no idempotence, linger 5 ms, no
// compression, fsync before ack: the topic default), and once all three
// have produced, each consumes its topic from the start, on its
// connection of the whole run. An op is three rounds in which each
// listener goes first, second and third once, so all three see the same
// machine. Plaintext fetches use sendfile (the default); TLS copies the
// bytes through the process and encrypts them.
//
// Reported per listener and phase: MB/s (record bytes), the TLS
// listeners' x-plaintext (their MB/s over PLAINTEXT's in the same rounds),
// and server-cpu-s/GB, the server process's user+system CPU seconds
// (/proc/PID/stat) per GB moved; the log adds the user share of those and
// the clients' (this process's) CPU seconds per GB, the Produce or Fetch
// requests per GB (strata_ingest_requests_total), the TLS version and
// cipher, and the load average. The limit for what TLS must add:
// aes-gcm-cpu-s/GB, one core's CPU seconds to seal a GB in 16 KiB TLS
// records with the cipher the listeners negotiate, measured in the same
// run (each direction of a TLS byte is sealed by one end and opened by the
// other).
func BenchmarkSecureProduceConsume(b *testing.B) {
	sec := newSecure(b)
	plaintext, ssl, saslSSL := freePort(b), freePort(b), freePort(b)
	listeners := "PLAINTEXT://" + plaintext + ",SSL://" + ssl + ",SASL_SSL://" + saslSSL
	s := &server{t: b, dataDir: b.TempDir(), kafka: plaintext, admin: freePort(b), meta: freePort(b), adminTLS: sec.tls(b), extra: []string{
		"--listeners", listeners,
		"--advertised.listeners", listeners,
		"--inter.broker.listener.name", "SASL_SSL",
		"--ssl.keystore.location", sec.pki.ServerKeystore,
		"--ssl.truststore.location", sec.pki.CAFile,
		"--sasl.inter.broker.username", sec.adminUser,
		"--sasl.inter.broker.password.file", sec.passwordFile,
		"--admin.token.file", sec.adminTokenFile,
		"--super.users", "User:ANONYMOUS",
	}}
	s.start()
	b.Cleanup(s.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	sec.addUser(ctx, b, []string{saslSSL}, secureBenchUser, secureBenchPassword)
	mib := secureBenchMiB(b)
	rounds := secureRounds * b.N
	var topics []string
	for _, name := range []string{"plaintext", "ssl", "sasl-ssl-acl"} {
		topics = append(topics, fmt.Sprintf("%s%s-warm", secureBenchPrefix, name))
		for r := range rounds {
			topics = append(topics, fmt.Sprintf("%s%s-%d", secureBenchPrefix, name, r))
		}
	}
	for _, topic := range topics {
		createTopic(b, s, topic, secureBenchPartitions, nil)
	}
	createTopic(b, s, "payments", 1, nil)
	admin := sec.client(b, []string{saslSSL}, scram.Auth{User: sec.adminUser, Pass: sec.adminPassword}.AsSha512Mechanism())
	createSecureBenchACLs(ctx, b, admin, secureBenchACLBindings(secureBenchACLs, fmt.Sprintf("%ssasl-ssl-acl-", secureBenchPrefix), rounds))

	opts := []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ConnIdleTimeout(15 * time.Minute),
		kgo.ProducerLinger(5 * time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression())}
	bench := scram.Auth{User: secureBenchUser, Pass: secureBenchPassword}.AsSha512Mechanism()
	all := []*secureListener{
		{name: "plaintext", client: newClientSeeds(b, []string{plaintext}, opts...)},
		{name: "ssl", client: newClientSeeds(b, []string{ssl}, append([]kgo.Opt{kgo.DialTLSConfig(sec.tls(b))}, opts...)...)},
		{name: "sasl-ssl-acl", client: sec.client(b, []string{saslSSL}, bench, opts...)},
	}
	// The SASL client is not a super user: a topic its ACLs do not cover
	// is refused.
	if err := sec.client(b, []string{saslSSL}, bench).ProduceSync(ctx, &kgo.Record{Topic: "payments", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		b.Fatalf("User:bench producing to payments: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	suite := negotiatedSuite(b, ssl, sec.tls(b))
	for _, l := range all { // connections, logins, metadata, the first segments
		warm := fmt.Sprintf("%s%s-warm", secureBenchPrefix, l.name)
		produceSecure(ctx, b, l.client, warm, 1)
		produceSecure(ctx, b, l.client, warm, 10_000)
		consumeSecure(ctx, b, l.client, warm, 10_001)
	}
	sealBefore := aesGCMSecondsPerGB(b, suite)

	pid := s.cmd.Process.Pid
	records := mib << 10
	b.ResetTimer()
	for r := range rounds {
		order := slices.Concat(all[r%len(all):], all[:r%len(all)])
		for phase := range securePhaseNames {
			for _, l := range order {
				if phase == secureProducePhase {
					b.StopTimer()
					produceSecure(ctx, b, l.client, l.topic(r), 1) // see secureFirstProduce
					b.StartTimer()
				}
				requests := serverRequests(b, s, securePhaseAPIs[phase])
				user, system := processCPUSeconds(b, pid)
				client, start := selfCPUSeconds(), time.Now()
				if phase == secureProducePhase {
					produceSecure(ctx, b, l.client, l.topic(r), records)
				} else {
					consumeSecure(ctx, b, l.client, l.topic(r), records+1)
				}
				l.elapsed[phase] += time.Since(start)
				userAfter, systemAfter := processCPUSeconds(b, pid)
				l.serverCPU[phase] += userAfter + systemAfter - user - system
				l.serverUser[phase] += userAfter - user
				l.clientCPU[phase] += selfCPUSeconds() - client
				l.requests[phase] += serverRequests(b, s, securePhaseAPIs[phase]) - requests
				l.bytes[phase] += int64(records) << 10
			}
		}
	}
	b.StopTimer()
	seal := (sealBefore + aesGCMSecondsPerGB(b, suite)) / 2

	base := all[0]
	for _, l := range all {
		for phase, phaseName := range securePhaseNames {
			gb := float64(l.bytes[phase]) / 1e9
			b.ReportMetric(l.rate(phase)/1e6, l.name+"-"+phaseName+"-MB/s")
			b.ReportMetric(l.serverCPU[phase]/gb, l.name+"-"+phaseName+"-server-cpu-s/GB")
			if l != base {
				b.ReportMetric(l.rate(phase)/base.rate(phase), l.name+"-"+phaseName+"-x-plaintext")
			}
			b.Logf("%s %s: %.0f MB/s, server %.2f CPU s/GB (%.2f of it user), this process (the clients) %.2f CPU s/GB, %.0f %s requests per GB",
				l.name, phaseName, l.rate(phase)/1e6, l.serverCPU[phase]/gb, l.serverUser[phase]/gb, l.clientCPU[phase]/gb,
				l.requests[phase]/gb, securePhaseAPIs[phase])
		}
	}
	b.ReportMetric(seal, "aes-gcm-cpu-s/GB")
	loadAvg, _ := os.ReadFile("/proc/loadavg")
	b.Logf("%s %s; %d MiB per listener per round, %d rounds; load average after: %s",
		tls.VersionName(suite.Version), tls.CipherSuiteName(suite.CipherSuite), mib, rounds, strings.TrimSpace(string(loadAvg)))
}

// secureFirstProduce: before each timed produce, one record goes to the
// topic alone, untimed. That loads the topic's metadata outside the clock,
// and it works around a race in the broker: its reader computes a frame's
// size limit before the frame arrives (conn.readFrame), so the first
// request after a SASL login is still held to sasl.server.max.receive.size
// (512 KiB), and a producer whose first request on a connection is a full
// batch of 8 partitions (7.8 MB here) is disconnected, again on every
// retry. One small request first lets the reader see the login. The
// clients also keep idle connections for 15 minutes (ConnIdleTimeout, franz-go's most), so no
// connection is opened anew inside a timed pass.

// secureBenchACLBindings is n ACLs shaped like a busy cluster's, as
// ingest's benchBindings: User:bench's prefixed Allow of Write and Read
// on secureBenchPrefix; a prefixed Deny of Write there for another user; a
// literal "*" Allow for an auditor; a literal Allow for another user of
// each of the rounds' topics (path plus the round); prefixed Allows for
// other users on every other prefix of path; then literal and prefixed
// ACLs of other users on topic names off that path, to fill n.
func secureBenchACLBindings(n int, path string, rounds int) []kmsg.CreateACLsRequestCreation {
	binding := func(pattern kmsg.ACLResourcePatternType, name, principal string, op kmsg.ACLOperation, permission kmsg.ACLPermissionType) kmsg.CreateACLsRequestCreation {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, name, pattern
		c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, permission
		return c
	}
	prefixed, literal := kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLResourcePatternTypeLiteral
	user := "User:" + secureBenchUser
	out := []kmsg.CreateACLsRequestCreation{
		binding(prefixed, secureBenchPrefix, user, kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow),
		binding(prefixed, secureBenchPrefix, user, kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow),
		binding(prefixed, secureBenchPrefix, "User:mallory", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeDeny),
		binding(literal, "*", "User:auditor", kmsg.ACLOperationDescribe, kmsg.ACLPermissionTypeAllow),
	}
	for r := range rounds {
		out = append(out, binding(literal, fmt.Sprintf("%s%d", path, r), "User:reporting", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow))
	}
	for i := 1; i <= len(path); i++ {
		if prefix := path[:i]; prefix != secureBenchPrefix {
			out = append(out, binding(prefixed, prefix, fmt.Sprintf("User:team-%d", i), kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow))
		}
	}
	for i := 0; len(out) < n; i++ {
		app := fmt.Sprintf("app-%d", i/2)
		if i%2 == 0 {
			out = append(out, binding(literal, app+"-events", "User:"+app, kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow))
		} else {
			out = append(out, binding(prefixed, app+"-", "User:"+app, kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow))
		}
	}
	return out[:n]
}

// createSecureBenchACLs creates bindings in one CreateAcls request.
func createSecureBenchACLs(ctx context.Context, b *testing.B, cl *kgo.Client, creations []kmsg.CreateACLsRequestCreation) {
	b.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = creations
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		b.Fatal(err)
	}
	for i, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			b.Fatalf("creating ACL %s: %v", creations[i].ResourceName, err)
		}
	}
}

// produceSecure produces n 1 KiB records to topic and waits for them all
// to be acknowledged.
func produceSecure(ctx context.Context, b *testing.B, cl *kgo.Client, topic string, n int) {
	b.Helper()
	value := make([]byte, 1024)
	var mu sync.Mutex
	var failed error
	for range n {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
			}
		})
	}
	flushAcknowledged(b, cl)
	if failed != nil {
		b.Fatalf("producing to %s: %v", topic, failed)
	}
}

// consumeSecure consumes topic's n records from the start of every
// partition on cl's connection, then stops consuming it.
func consumeSecure(ctx context.Context, b *testing.B, cl *kgo.Client, topic string, n int) {
	b.Helper()
	partitions := map[int32]kgo.Offset{}
	for p := range int32(secureBenchPartitions) {
		partitions[p] = kgo.NewOffset().AtStart()
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: partitions})
	for got := 0; got < n; {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			b.Fatalf("consumed %d of %d records of %s: %v", got, n, topic, err)
		}
		fetches.EachError(func(t string, p int32, err error) { b.Fatalf("fetch %s[%d]: %v", t, p, err) })
		got += fetches.NumRecords()
		if got > n {
			b.Fatalf("consumed %d records of %s, more than the %d produced", got, topic, n)
		}
	}
	cl.PurgeTopicsFromClient(topic)
}

// processCPUSeconds is process pid's user and system CPU time, from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s: Linux's
// USER_HZ everywhere Go runs).
func processCPUSeconds(b testing.TB, pid int) (user, system float64) {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, data)
	}
	return float64(utime) / 100, float64(stime) / 100
}

// serverRequests is how many requests of api the server has answered
// (strata_ingest_requests_total on its admin address, open without a
// credential by default).
func serverRequests(b *testing.B, s *server, api string) float64 {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: s.adminTLS}, Timeout: adminHTTP.Timeout}
	resp, err := client.Get("https://" + s.admin + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	prefix := `strata_ingest_requests_total{api="` + api + `"} `
	for _, line := range strings.Split(string(body), "\n") {
		if value, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.ParseFloat(value, 64)
			if err != nil {
				b.Fatalf("/metrics: %q: %v", line, err)
			}
			return n
		}
	}
	return 0
}

// selfCPUSeconds is this process's user plus system CPU time.
func selfCPUSeconds() float64 {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// negotiatedSuite is the TLS version and cipher suite a client with cfg
// gets from the listener at address.
func negotiatedSuite(b *testing.B, address string, cfg *tls.Config) tls.ConnectionState {
	b.Helper()
	conn, err := tls.Dial("tcp", address, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState()
}

// aesGCMSecondsPerGB is the limit for TLS's cipher: the CPU seconds one
// thread takes to seal a GB in 16 KiB records (TLS's largest) with the
// AES-GCM of suite (thread CPU time, so the other load on the machine
// does not count).
func aesGCMSecondsPerGB(b *testing.B, state tls.ConnectionState) float64 {
	b.Helper()
	keyBytes := 16
	switch state.CipherSuite {
	case tls.TLS_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256:
	case tls.TLS_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384:
		keyBytes = 32
	default:
		b.Fatalf("the listeners negotiated %s, not AES-GCM: measure its cipher instead", tls.CipherSuiteName(state.CipherSuite))
	}
	block, err := aes.NewCipher(make([]byte, keyBytes))
	if err != nil {
		b.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		b.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	thread := func() float64 {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_THREAD, &ru)
		return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	}
	plain := make([]byte, 16<<10)
	sealed := make([]byte, 0, len(plain)+aead.Overhead())
	nonce := make([]byte, aead.NonceSize())
	const total = 1 << 30
	start := thread()
	for done := 0; done < total; done += len(plain) {
		nonce[0]++
		sealed = aead.Seal(sealed[:0], nonce, plain, nil)
	}
	return (thread() - start) / (total / 1e9)
}
