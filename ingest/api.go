package ingest

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// api is one row of the dispatch table: a Kafka API key, the versions the
// broker answers, and the function that answers them. The ApiVersions
// response is built from this table, so what the broker advertises and what
// it dispatches are the same list.
type api struct {
	key        int16
	name       string
	minVersion int16
	maxVersion int16
	handle     func(ctx context.Context, b *Broker, req *request) (reply, error)
}

// apis is the dispatch table, indexed by API key. It is filled by the init
// functions of the numbered files (00_produce.go, 01_fetch.go, …) and never
// changes afterwards.
var apis = map[int16]*api{}

// request is one decoded request as a handler sees it.
type request struct {
	header   requestHeader
	body     kmsg.Request
	received time.Time
	// readerDone is closed once the connection reads no more requests; a
	// long poll stops waiting then.
	readerDone <-chan struct{}
	// remote is the client's address, host:port.
	remote string
	// session is the connection's security state: who sent the request.
	session *session
	// waited is how long the handler waited for data (a long poll), which
	// request_percentage does not count.
	waited time.Duration
}

// register adds the API whose request type is R to the dispatch table. The
// key comes from R itself, so a file cannot register a handler under the
// wrong key. It panics on a duplicate key or on versions kmsg cannot encode:
// both are programming errors found the first time the package loads.
func register[R kmsg.Request](minVersion, maxVersion int16, handle func(ctx context.Context, b *Broker, req *request, body R) (reply, error)) {
	var zero R
	key := zero.Key()
	if _, dup := apis[key]; dup {
		panic(fmt.Sprintf("ingest: api key %d registered twice", key))
	}
	if minVersion < 0 || minVersion > maxVersion || maxVersion > zero.MaxVersion() {
		panic(fmt.Sprintf("ingest: %s versions %d-%d outside kmsg's 0-%d", kmsg.NameForKey(key), minVersion, maxVersion, zero.MaxVersion()))
	}
	apis[key] = &api{
		key:        key,
		name:       kmsg.NameForKey(key),
		minVersion: minVersion,
		maxVersion: maxVersion,
		handle: func(ctx context.Context, b *Broker, req *request) (reply, error) {
			return handle(ctx, b, req, req.body.(R))
		},
	}
}

// lookupAPI returns the table row for key if version is one it answers.
func lookupAPI(key, version int16) (*api, bool) {
	a, ok := apis[key]
	if !ok || version < a.minVersion || version > a.maxVersion {
		return nil, false
	}
	return a, true
}

// supportedAPIs lists the table in key order, as ApiVersions reports it.
func supportedAPIs() []*api {
	out := make([]*api, 0, len(apis))
	for _, a := range apis {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// msDuration converts a protocol millisecond field to a Duration.
func msDuration(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }
