package ingest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/stratalog/strata/interbroker"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/tlsfiles"
	"github.com/stratalog/strata/tlsfiles/tlstest"
)

// The inter-broker connection a follower fetches over (package
// interbroker), against this package's broker on a TCP listener: every
// way a broker logs in to another, a session renewed on its connection, a
// long poll its context ends, and responses read into one buffer.

// countingListener counts the connections a broker accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// serveTCP serves b on a loopback listener until b stops, and returns it.
func serveTCP(t *testing.T, b *Broker) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counting := &countingListener{Listener: ln}
	go b.Serve(counting)
	return counting
}

// brokersIn asks for the cluster's metadata over conn.
func brokersIn(ctx context.Context, conn *interbroker.Conn) (int, error) {
	resp, err := conn.Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		return 0, err
	}
	return len(resp.(*kmsg.MetadataResponse).Brokers), nil
}

func TestInterBrokerLogins(t *testing.T) {
	b := newSASLBroker(t, nil)
	addr := serveTCP(t, b).Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for name, dialer := range map[string]interbroker.Dialer{
		"PLAIN":         {SASL: plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()},
		"SCRAM-SHA-256": {SASL: scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()},
		"SCRAM-SHA-512": {SASL: scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()},
	} {
		conn := dialer.Open(addr)
		if n, err := brokersIn(ctx, conn); err != nil || n != 1 {
			t.Errorf("%s: %d brokers, %v", name, n, err)
		}
		conn.Close()
	}
	for name, dialer := range map[string]interbroker.Dialer{
		"a wrong password": {SASL: scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism()},
		"no login":         {},
	} {
		conn := dialer.Open(addr)
		_, err := brokersIn(ctx, conn)
		if name == "a wrong password" && !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
		if err == nil {
			t.Errorf("%s: metadata answered", name)
		}
		conn.Close()
	}
}

// TestInterBrokerReauthentication: past the session's lifetime
// (connections.max.reauth.ms) the broker cuts off a connection that has
// not logged in again; the Conn logs in again on the same connection
// before its next request once 85% of the lifetime has passed, as Kafka's
// clients do (KIP-368), so a request near the end of a session does not
// find it ended on arrival.
func TestInterBrokerReauthentication(t *testing.T) {
	const lifetime = 300 * time.Millisecond
	b := newSASLBroker(t, func(c *Config) { c.Security.ReauthMax = lifetime })
	ln := serveTCP(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := interbroker.Dialer{SASL: scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()}.Open(ln.Addr().String())
	defer conn.Close()
	logins := b.metrics.authentications.WithLabelValues("SCRAM-SHA-512", "succeeded")
	for i, pause := range []time.Duration{
		lifetime * 9 / 10, // within the session, past 85% of it
		lifetime * 4 / 3,  // past its end
		0,
	} {
		if n, err := brokersIn(ctx, conn); err != nil || n != 1 {
			t.Fatalf("request %d: %d brokers, %v", i, n, err)
		}
		if got := testutil.ToFloat64(logins); got != float64(i+1) {
			t.Fatalf("request %d: %v logins, want %d", i, got, i+1)
		}
		time.Sleep(pause)
	}
	if n := ln.accepted.Load(); n != 1 {
		t.Fatalf("%d connections, want the one, logged in again", n)
	}
}

// TestInterBrokerTLS: a Dialer's TLS configuration without a server name
// verifies the broker's certificate against the address's host, as a
// follower's built from the truststore has none.
func TestInterBrokerTLS(t *testing.T) {
	pki := tlstest.Write(t, t.TempDir(), "127.0.0.1")
	server, err := tlsfiles.NewServer(tlsfiles.Files{CertFile: pki.ServerKeystore, KeyFile: pki.ServerKeystore, CAFile: pki.CAFile}, tlsfiles.ClientAuthRequested, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := newTestBroker(t, func(c *Config) { c.Listeners[0].Protocol, c.Listeners[0].TLS = SSL, server.Config() })
	addr := serveTCP(t, b).Addr().String()
	cfg, err := tlsfiles.Client(tlsfiles.Files{CAFile: pki.CAFile}, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := interbroker.Dialer{TLS: cfg}.Open(addr)
	defer conn.Close()
	if n, err := brokersIn(ctx, conn); err != nil || n != 1 {
		t.Fatalf("%d brokers, %v", n, err)
	}
	if cfg.ServerName != "" {
		t.Fatalf("the Dialer's configuration was changed: server name %q", cfg.ServerName)
	}
}

// fetchFrom is a Fetch of partition 0 of topic from offset, waiting up to
// wait for a byte.
func fetchFrom(topic meta.Topic, offset int64, wait time.Duration) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = int32(wait.Milliseconds()), 1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic.Name, topic.ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestInterBrokerFetchesShareABuffer: each response is read into the
// buffer the last one used, which is what spares a follower a fresh
// allocation the size of every response it receives.
func TestInterBrokerFetchesShareABuffer(t *testing.T) {
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "buffer"}
	topic := h.topic(1, nil)
	batch := h.produce(topic, 200)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := interbroker.Dialer{}.Open(serveTCP(t, b).Addr().String())
	defer conn.Close()

	var first *byte
	for i := range 3 {
		resp, err := conn.Request(ctx, fetchFrom(topic, 0, 0))
		if err != nil {
			t.Fatal(err)
		}
		got := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if got.ErrorCode != 0 || !bytes.Equal(got.RecordBatches, batch) {
			t.Fatalf("fetch %d: %v, %d bytes, want the %d produced", i, kerr.ErrorForCode(got.ErrorCode), len(got.RecordBatches), len(batch))
		}
		if i == 0 {
			first = &got.RecordBatches[0]
		} else if &got.RecordBatches[0] != first {
			t.Fatalf("fetch %d was read into a new buffer", i)
		}
	}
}

// TestInterBrokerContextEndsALongPoll: a follower stopping (its context
// ended) does not wait out a long poll; the Conn dials again for the next
// request.
func TestInterBrokerContextEndsALongPoll(t *testing.T) {
	b := newTestBroker(t, nil)
	h := &handlerTest{t: t, broker: b, client: connect(t, b), name: "long-poll"}
	topic := h.topic(1, nil)
	ln := serveTCP(t, b)
	conn := interbroker.Dialer{}.Open(ln.Addr().String())
	defer conn.Close()

	ctx, cancel := context.WithCancel(context.Background())
	answered := make(chan error, 1)
	go func() {
		_, err := conn.Request(ctx, fetchFrom(topic, 0, 10*time.Minute))
		answered <- err
	}()
	p, _ := b.partitions.Leader(b.meta.State(), topic.Name, 0)
	waitForWatcher(t, p)
	cancel()
	// The poll waits ten minutes: a minute without an answer is a
	// failure, not a wait.
	select {
	case err := <-answered:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the long poll ended with %v, want its context's end", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the long poll outlived its context by a minute")
	}

	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if n, err := brokersIn(ctx, conn); err != nil || n != 1 {
		t.Fatalf("the next request: %d brokers, %v", n, err)
	}
	if n := ln.accepted.Load(); n != 2 {
		t.Fatalf("%d connections, want a second after the cut one", n)
	}
}
