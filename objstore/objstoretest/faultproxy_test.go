package objstoretest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// StallResponse lets the request reach the server, which acts on it, and
// holds the answer: released, the client gets it whole; abandoned, the
// client gets nothing, though the server acted.
func TestStallResponse(t *testing.T) {
	t.Parallel()
	served := make(chan string, 2)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		served <- string(body)
		w.Header().Set("ETag", `"stored"`)
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "stored "+string(body))
	}))
	t.Cleanup(target.Close)
	proxy, err := NewFaultProxy(target.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	release := make(chan struct{})
	proxy.Add(Method(http.MethodPut), StallResponse(release), 1)

	put := func(ctx context.Context, body string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, proxy.URL()+"/key", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return http.DefaultClient.Do(req)
	}
	type answer struct {
		body string
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := put(context.Background(), "one")
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answered <- answer{string(b), err}
	}()
	if got := <-served; got != "one" {
		t.Fatalf("the server saw %q, want one", got)
	}
	select {
	case a := <-answered:
		t.Fatalf("the client was answered (%+v) while the response was held", a)
	default:
	}
	close(release)
	if a := <-answered; a.err != nil || a.body != "stored one" {
		t.Fatalf("released: %+v, want the server's whole answer", a)
	}

	proxy.Add(Method(http.MethodPut), StallResponse(nil), 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		resp, err := put(ctx, "two")
		if err == nil {
			resp.Body.Close()
		}
		answered <- answer{err: err}
	}()
	if got := <-served; got != "two" {
		t.Fatalf("the server saw %q, want two", got)
	}
	cancel()
	if a := <-answered; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("abandoned: %v, want the client's cancellation and no answer", a.err)
	}
}

// Pass lets every request through unchanged, and the rule records each
// one's method, URL and headers as the client sent them.
func TestPassRecords(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Method+" "+r.Header.Get("X-Test"))
	}))
	t.Cleanup(target.Close)
	proxy, err := NewFaultProxy(target.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	rule := proxy.Add(HasQuery("uploads"), Pass(), 0)

	for _, path := range []string{"/a?uploads", "/b", "/c?uploads"} {
		req, err := http.NewRequest(http.MethodPost, proxy.URL()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Test", path)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(body) != "POST "+path {
			t.Fatalf("%s: answered %q, %v; want the server's answer", path, body, err)
		}
	}
	got := rule.Requests()
	if rule.Hits() != 2 || len(got) != 2 {
		t.Fatalf("%d hits, %d requests recorded; want 2 of each", rule.Hits(), len(got))
	}
	for i, want := range []string{"/a?uploads", "/c?uploads"} {
		if r := got[i]; r.Method != http.MethodPost || r.URL.RequestURI() != want || r.Header.Get("X-Test") != want {
			t.Errorf("request %d: %s %s X-Test=%q, want POST %s", i, r.Method, r.URL.RequestURI(), r.Header.Get("X-Test"), want)
		}
	}
}
