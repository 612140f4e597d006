package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/record"
)

// The principal and topic the authorization benchmarks ask about: a
// producer allowed Write by one prefixed ACL ("orders-") among others.
const (
	benchPrincipal = "User:bench"
	benchSuperUser = "User:admin"
	benchTopic     = "orders-eu-42"
	benchPrefix    = "orders-"
)

// benchBindings is n ACLs shaped like a busy cluster's, in this order:
// the prefixed Allow of Write that lets benchPrincipal produce to
// benchTopic; three more the check must walk and reject (a prefixed Deny
// of "orders-" for another user, a literal "*" Allow for an auditor, a
// literal Allow of benchTopic itself for another user); prefixed Allows
// for other users on every other prefix of benchTopic's name ("o", "or",
// ... "orders-eu-4"), which lie on its path in the metadata's tree; then,
// to fill n, literal and prefixed ACLs of other users on many topic names
// off that path ("app-17-events", "app-18-"). A check of benchTopic is
// handed 14 bindings to read (all of them when n is 14 or less), however
// many there are in all.
func benchBindings(n int) []acl.Binding {
	binding := func(pattern acl.PatternType, name, principal string, op acl.Operation, permission acl.Permission) acl.Binding {
		return acl.Binding{ResourceType: acl.Topic, ResourceName: name, PatternType: pattern, Principal: principal, Host: "*", Operation: op, Permission: permission}
	}
	out := []acl.Binding{
		binding(acl.PatternPrefixed, benchPrefix, benchPrincipal, acl.OpWrite, acl.Allow),
		binding(acl.PatternPrefixed, benchPrefix, "User:mallory", acl.OpWrite, acl.Deny),
		binding(acl.PatternLiteral, acl.Wildcard, "User:auditor", acl.OpDescribe, acl.Allow),
		binding(acl.PatternLiteral, benchTopic, "User:reporting", acl.OpRead, acl.Allow),
	}
	for i := 1; i < len(benchTopic); i++ {
		if prefix := benchTopic[:i]; prefix != benchPrefix {
			out = append(out, binding(acl.PatternPrefixed, prefix, fmt.Sprintf("User:team-%d", i), acl.OpWrite, acl.Allow))
		}
	}
	for i := 0; len(out) < n; i++ {
		app := fmt.Sprintf("app-%d", i/2)
		if i%2 == 0 {
			out = append(out, binding(acl.PatternLiteral, app+"-events", "User:"+app, acl.OpRead, acl.Allow))
		} else {
			out = append(out, binding(acl.PatternPrefixed, app+"-", "User:"+app, acl.OpWrite, acl.Allow))
		}
	}
	return out[:n]
}

// newACLBroker is a test broker with acls proposed through its metadata
// group, benchSuperUser a super user, and resources without ACLs open
// (allow.everyone.if.no.acl.found), so with no ACL at all the authorizer
// takes its shortcut.
func newACLBroker(b *testing.B, acls int) *Broker {
	b.Helper()
	broker := newTestBroker(b, func(c *Config) {
		c.Security.AllowEveryoneIfNoACL = true
		c.Security.SuperUsers = []string{benchSuperUser}
	})
	if acls > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := broker.meta.Propose(ctx, &meta.CreateACLs{Bindings: benchBindings(acls)}); err != nil {
			b.Fatal(err)
		}
		if got := len(broker.meta.State().ACLs()); got != acls {
			b.Fatalf("the metadata holds %d ACLs, want %d", got, acls)
		}
	}
	return broker
}

// requestFrom is a request as a connection from principal sends it.
func requestFrom(principal string) *request {
	return &request{session: &session{principal: principal, host: "127.0.0.1"}}
}

// BenchmarkAuthorize is the cost of one authorization check as Produce
// asks it (Write on benchTopic), through Broker.authorize against a real
// metadata state: with no ACL (the allow.everyone.if.no.acl.found
// shortcut), with 10 and 1,000 ACLs (benchBindings: the principal allowed
// by a prefixed ACL, the check reading every binding on the topic's path),
// and for a super user among 1,000 ACLs. Reported: ns/op, allocs/op, and
// bindings, how many bindings the metadata hands the check.
func BenchmarkAuthorize(b *testing.B) {
	open, ten, thousand := newACLBroker(b, 0), newACLBroker(b, 10), newACLBroker(b, 1000)
	for _, c := range []struct {
		name      string
		broker    *Broker
		principal string
	}{
		{"no-acls", open, benchPrincipal},
		{"acls=10", ten, benchPrincipal},
		{"acls=1000", thousand, benchPrincipal},
		{"super-user/acls=1000", thousand, benchSuperUser},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := requestFrom(c.principal)
			if !c.broker.authorize(req, acl.OpWrite, acl.Topic, benchTopic) {
				b.Fatalf("%s may not write %s", c.principal, benchTopic)
			}
			if c.principal == benchPrincipal && c.broker.meta.State().HasACLs() &&
				c.broker.authorize(requestFrom("User:stranger"), acl.OpWrite, acl.Topic, benchTopic) {
				b.Fatal("a principal without an ACL may write: the check did not read the bindings")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if !c.broker.authorize(req, acl.OpWrite, acl.Topic, benchTopic) {
					b.Fatal("refused")
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(len(slices.Collect(c.broker.meta.State().Bindings(acl.Topic, benchTopic)))), "bindings")
		})
	}
}

// produceBench is one broker's side of BenchmarkProduceAuthorized: a
// topic on it and a principal to produce as.
type produceBench struct {
	broker    *Broker
	req       *request
	elapsed   time.Duration
	requests  int
	batch     []byte
	partition kmsg.ProduceRequestTopicPartition
}

func newProduceBench(b *testing.B, acls int) *produceBench {
	b.Helper()
	broker := newACLBroker(b, acls)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// flush.ms: no fsync before ack, so the figure is the handler's and
	// not the disk's.
	if _, err := broker.meta.Propose(ctx, &meta.CreateTopic{ID: uuid.New(), Name: benchTopic, Replicas: [][]int32{{broker.config.BrokerID}},
		Configs: map[string]string{"flush.ms": "1000"}}); err != nil {
		b.Fatal(err)
	}
	records := make([]record.Record, 4)
	for i := range records {
		records[i] = record.Record{Key: []byte(fmt.Sprintf("key-%d", i)), Value: []byte(strings.Repeat("v", 256))}
	}
	batch, err := record.Build(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1}, records)
	if err != nil {
		b.Fatal(err)
	}
	p := &produceBench{broker: broker, req: requestFrom(benchPrincipal), batch: batch, partition: kmsg.NewProduceRequestTopicPartition()}
	// The partition's leadership starts asynchronously after the topic is
	// created: wait for the first produce to be taken.
	deadline := time.Now().Add(30 * time.Second)
	for code := p.produce(b); code != 0; code = p.produce(b) {
		if time.Now().After(deadline) {
			b.Fatalf("produce to %s: error code %d after 30s", benchTopic, code)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return p
}

// produce hands the handler one Produce v9 request (acks=1, one
// partition, one 4-record batch of 1.1 KB) as a connection's processor
// would, waits for its acknowledgement as the responder would, and
// returns the partition's error code.
func (p *produceBench) produce(b *testing.B) int16 {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = 1, 30_000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = benchTopic
	part := p.partition
	part.Records = append([]byte(nil), p.batch...) // the handler stamps the base offset
	t.Partitions = append(t.Partitions, part)
	req.Topics = append(req.Topics, t)
	r, err := handleProduce(context.Background(), p.broker, p.req, req)
	if err != nil {
		b.Fatal(err)
	}
	awaited := r.(awaitedReply)
	awaited.wait()
	return awaited.reply.(messageReply).response.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// run produces n requests and adds their time.
func (p *produceBench) run(b *testing.B, n int) {
	start := time.Now()
	for range n {
		if code := p.produce(b); code != 0 {
			b.Fatalf("produce: error code %d", code)
		}
	}
	p.elapsed += time.Since(start)
	p.requests += n
}

func (p *produceBench) nsPerRequest() float64 {
	return float64(p.elapsed.Nanoseconds()) / float64(p.requests)
}

// BenchmarkProduceAuthorized is the handler's cost for a small Produce
// request (one partition, one batch of 4 records, acks=1, a topic with
// flush.ms so that no fsync is awaited) from a principal allowed by a
// prefixed ACL among 1,000 (benchBindings), beside the same request to a
// broker without ACLs, whose authorizer takes its shortcut: the limit the
// authorizer's cost is measured against. The two brokers alternate in
// blocks of 256 requests, so both see the same machine; each op is one
// request to each. Reported: ns/request with the 1,000 ACLs,
// no-acl-ns/request, x-no-acl (their ratio) and authorizer-ns/request
// (their difference).
func BenchmarkProduceAuthorized(b *testing.B) {
	authorized, open := newProduceBench(b, 1000), newProduceBench(b, 0)
	const block = 256
	b.ResetTimer()
	for done := 0; done < b.N; done += block {
		n := min(block, b.N-done)
		if done/block%2 == 0 {
			authorized.run(b, n)
			open.run(b, n)
		} else {
			open.run(b, n)
			authorized.run(b, n)
		}
	}
	b.StopTimer()
	b.ReportMetric(authorized.nsPerRequest(), "ns/request")
	b.ReportMetric(open.nsPerRequest(), "no-acl-ns/request")
	b.ReportMetric(authorized.nsPerRequest()/open.nsPerRequest(), "x-no-acl")
	b.ReportMetric(authorized.nsPerRequest()-open.nsPerRequest(), "authorizer-ns/request")
}
