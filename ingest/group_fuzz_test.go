package ingest

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupFuzzKeys are the API keys FuzzGroupRequests drives; an input's key
// byte indexes this list.
var groupFuzzKeys = []int16{8, 9, 10, 11, 12, 13, 14, 15, 16, 42, 47}

// FuzzGroupRequests decodes each input as a sequence of group requests,
// each [key index][version][uint16 length][body], and runs every one that
// kmsg decodes through its handler on one broker, whose groups carry over
// from input to input. No handler may panic, fail, answer at another
// version, or produce a response that does not encode, and every handler
// must return: each is given a 20 ms deadline, and a rebalance timeout of
// days in a request must not outlast it.
//
// How long a handler took is not checked: on a busy machine a commit
// through the metadata log can take seconds and be correct. A handler
// that waits on something other than its context never returns, and the
// run fails as a hang (go test's -timeout, or the fuzzer's hung-worker
// report), with the stack of the goroutine that waits.
func FuzzGroupRequests(f *testing.F) {
	b := newTestBrokerWith(f, func(c *Config) {
		c.Groups.MinSessionTimeout, c.Groups.MaxSessionTimeout = time.Millisecond, 100*time.Millisecond
	}, func(m Metadata) Metadata { return smallTopics{m} })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := b.createTopic(ctx, topicSpec{name: "fuzz", partitions: 2, replicationFactor: 1}, false); err != nil {
		f.Fatal(err)
	}
	readerDone := make(chan struct{})
	f.Fuzz(func(t *testing.T, input []byte) {
		for len(input) >= 4 {
			key := groupFuzzKeys[int(input[0])%len(groupFuzzKeys)]
			version := int16(input[1])
			n := int(binary.BigEndian.Uint16(input[2:]))
			input = input[4:]
			body := input[:min(n, len(input))]
			input = input[len(body):]

			a, ok := lookupAPI(key, version)
			if !ok {
				continue
			}
			req := kmsg.RequestForKey(key)
			req.SetVersion(version)
			if err := req.ReadFrom(body); err != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			r := &request{header: requestHeader{key: key, version: version, clientID: "fuzz"}, body: req, received: time.Now(), readerDone: readerDone, remote: "127.0.0.1:1"}
			rep, err := a.handle(ctx, b, r)
			cancel()
			if err != nil {
				t.Fatalf("%s v%d: %v", a.name, version, err)
			}
			resp := rep.(messageReply).response
			if resp.GetVersion() != version {
				t.Fatalf("%s v%d answered with v%d", a.name, version, resp.GetVersion())
			}
			resp.AppendTo(nil)
			rep.release()
		}
	})
}
