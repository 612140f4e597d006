package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestAdminEndpoints serves the admin mux on loopback and checks the
// endpoints that need no broker: health, readiness with its reason, and
// the runtime profiles.
func TestAdminEndpoints(t *testing.T) {
	t.Parallel()
	none := func(context.Context) (any, error) { return nil, errors.New("no broker in this test") }
	admin := newAdminServer(adminHandlers{
		gatherer:   prometheus.NewRegistry(),
		ready:      func() error { return errors.New("starting: waiting for the metadata group") },
		status:     none,
		groupLag:   func(context.Context, string) (any, error) { return none(context.Background()) },
		tierStatus: none,
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
