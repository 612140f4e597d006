package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/offload"
)

// TestAdminEndpoints serves the admin mux on loopback and checks the
// endpoints that need no broker: health, readiness with its reason, the
// runtime profiles, and the JSON endpoints' answers to what they cannot
// honour: 404 with the handler's message, 400 for a query parameter they
// do not take.
func TestAdminEndpoints(t *testing.T) {
	t.Parallel()
	none := func(context.Context) (any, error) { return nil, errors.New("no broker in this test") }
	admin := newAdminServer(adminHandlers{
		gatherer: prometheus.NewRegistry(),
		ready:    func() error { return errors.New("starting: waiting for the metadata group") },
		status:   none,
		groupLag: func(_ context.Context, group string) (any, error) {
			return nil, fmt.Errorf("%w: group %q has no members and no committed offsets", errAdminNotFound, group)
		},
		tierStatus: func(_ context.Context, topic string) (any, error) {
			if topic == "known" {
				return offload.Status{Partitions: []offload.PartitionStatus{}}, nil
			}
			return nil, fmt.Errorf("%w: no topic %q", errAdminNotFound, topic)
		},
	}, slog.New(slog.DiscardHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- admin.serve(ln) }()
	t.Cleanup(func() {
		admin.shutdown(context.Background())
		if err := <-done; err != nil {
			t.Errorf("admin serve: %v", err)
		}
	})

	for _, c := range []struct {
		path   string
		status int
		body   string
	}{
		{"/healthz", http.StatusOK, "ok"},
		{"/readyz", http.StatusServiceUnavailable, "waiting for the metadata group"},
		{"/debug/pprof/", http.StatusOK, "goroutine"},
		{"/debug/pprof/goroutine?debug=1", http.StatusOK, "goroutine profile"},
		{"/debug/pprof/cmdline", http.StatusOK, ""},
		{"/v1/groups/missing/lag", http.StatusNotFound, `group "missing" has no members`},
		{"/v1/tier/status?topic=known", http.StatusOK, `"partitions": []`},
		{"/v1/tier/status?topic=nosuch", http.StatusNotFound, `no topic "nosuch"`},
		{"/v1/tier/status?topic=", http.StatusBadRequest, "give topic once, not empty"},
		{"/v1/tier/status?topic=a&topic=b", http.StatusBadRequest, "give topic once"},
		{"/v1/tier/status?topics=known", http.StatusBadRequest, `takes only topic: unknown query parameter "topics"`},
		{"/v1/groups/g/lag?topic=t", http.StatusBadRequest, `takes no query parameters: unknown query parameter "topic"`},
		{"/v1/cluster/status?verbose=1", http.StatusBadRequest, `unknown query parameter "verbose"`},
		{"/v1/cluster/status", http.StatusServiceUnavailable, "no broker in this test"},
	} {
		resp, err := http.Get("http://" + ln.Addr().String() + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != c.status || !strings.Contains(string(body), c.body) {
			t.Errorf("GET %s: %d %q, want %d containing %q", c.path, resp.StatusCode, body, c.status, c.body)
		}
	}
}
