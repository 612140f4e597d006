package integration

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestReplicationOverSASLSSL runs three brokers whose only listener is
// SASL_SSL: followers log in to leaders as the broker user over TLS, an
// acks=all topic of three replicas keeps its ISR, and a broker restarted
// with the wrong password cannot follow again.
func TestReplicationOverSASLSSL(t *testing.T) {
	sec := newSecure(t)
	wrong := sec.write(t, "wrong.password", "not-the-broker-password")
	servers := startClusterFlags(t, 3, 3,
		func(_ int, s *server) { s.adminTLS = sec.tls(t) },
		func(_ int, s *server) []string { return sec.flags(s.kafka) },
		"--replica.lag.time.max.ms", "2000")
	var seeds []string
	for _, s := range servers {
		seeds = append(seeds, s.kafka)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := sec.admin(t, seeds)
	replicatedTopic(ctx, t, admin, "replicated", 1, nil)

	// The metadata port admits only peers: a TLS client without a
	// certificate is refused in the handshake.
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", servers[0].meta, sec.tls(t))
	if err == nil {
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
	}
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the metadata port served a client without a certificate: %v", err)
	}

	producer := sec.client(t, seeds, scram.Auth{User: sec.adminUser, Pass: sec.adminPassword}.AsSha512Mechanism(), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "replicated", Value: fmt.Appendf(nil, "record %d", i)}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produce(0, 50)

	third := servers[2]
	third.stop()
	i := slices.Index(third.extra, sec.passwordFile)
	third.extra[i] = wrong
	third.start()
	eventually(t, "a leader refuses the broker with the wrong password", func() bool {
		for _, s := range servers[:2] {
			if strings.Contains(s.log.String(), "SASL authentication failed") {
				return true
			}
		}
		return false
	})
	if !strings.Contains(third.log.String(), "SASL_AUTHENTICATION_FAILED") && !strings.Contains(third.log.String(), "SASL authentication failed") {
		t.Logf("broker 3's log does not name the failed login:\n%s", third.log)
	}
	produce(50, 100)
	// However long it tries, it never catches up: wait past several lag
	// windows, then look.
	time.Sleep(5 * time.Second)
	waitPartitions(ctx, t, admin, "replicated", "ISR without broker 3", func(p kadm.PartitionDetail) bool {
		return len(p.ISR) == 2 && !slices.Contains(p.ISR, 3)
	})
	// The password was all that kept it out: with the right one it
	// rejoins.
	third.stop()
	third.extra[i] = sec.passwordFile
	third.start()
	waitPartitions(ctx, t, admin, "replicated", "broker 3 back in the ISR", func(p kadm.PartitionDetail) bool {
		return len(p.ISR) == 3
	})

	consumer := sec.client(t, seeds, scram.Auth{User: sec.adminUser, Pass: sec.adminPassword}.AsSha512Mechanism(),
		kgo.ConsumeTopics("replicated"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got int
	for got < 100 {
		fetches := consumer.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("record %d", got); string(r.Value) != want {
				t.Fatalf("record at offset %d is %q, want %q", r.Offset, r.Value, want)
			}
			got++
		})
	}
}
