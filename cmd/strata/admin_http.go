package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stratalog/strata/acl"
	"github.com/stratalog/strata/meta"
)

// statusPath is where the admin server answers `strata cluster status`.
const statusPath = "/v1/cluster/status"

// tierStatusPath is where the admin server answers `strata tier status`.
const tierStatusPath = "/v1/tier/status"

// tieredPath is where `strata topic describe` reads what a topic's
// partitions hold in the bucket.
const tieredPath = "/v1/topics/{topic}/tiered"

// tieredPartition is one partition's committed remote segments.
type tieredPartition struct {
	Partition int32 `json:"partition"`
	Segments  int   `json:"segments"`
	Bytes     int64 `json:"bytes"`
}

// tieredOf is the tiered document of topic from st: each partition's
// committed segments and their log bytes. Any broker answers it, from its
// copy of the metadata.
func tieredOf(st *meta.State, topic string) ([]tieredPartition, error) {
	if _, ok := st.Topic(topic); !ok {
		return nil, fmt.Errorf("%w: no topic %q (`strata topic list` lists the topics)", errAdminNotFound, topic)
	}
	out := []tieredPartition{}
	for _, p := range st.Partitions(topic) {
		tp := tieredPartition{Partition: p.Partition}
		if m, ok := st.Manifest(topic, p.Partition); ok {
			for _, s := range m.Committed().Segments {
				tp.Segments++
				tp.Bytes += s.LogBytes
			}
		}
		out = append(out, tp)
	}
	return out, nil
}

// drainPath is where `strata broker drain` and `undrain` mark a broker.
const drainPath = "/v1/brokers/{id}/drain"

// drainState is the drain endpoints' answer.
type drainState struct {
	Broker   int32 `json:"broker"`
	Draining bool  `json:"draining"`
}

// adminServer is the HTTP server on the admin address:
//
//	/metrics           Prometheus exposition of every registered metric
//	/healthz           200 while the process runs
//	/readyz            200 once the broker serves Kafka requests and every
//	                   partition it leads is open, else 503 and why (naming
//	                   the partitions that failed to open and are retried)
//	/v1/cluster/status JSON: metadata voters, leader, term, commit index, brokers
//	/v1/tier/status    JSON: offload's Status, per tiered partition: local
//	                   start, tiered end, bytes awaiting upload, last upload;
//	                   ?topic=T keeps T's partitions (404 if T is unknown)
//	/v1/groups/{group}/lag JSON: the group's lag per partition, in records and
//	                   ms, and whether it is stalled (see group.PartitionLag);
//	                   404 for a group with no members and no offsets
//	/v1/topics/{topic}/tiered JSON: each partition's committed segments in the
//	                   bucket and their bytes, from the metadata; 404 if the
//	                   topic is unknown
//	POST, DELETE /v1/brokers/{id}/drain
//	                   start or end draining a broker (meta.DrainBroker):
//	                   its leaderships move away and it takes no new
//	                   replicas; `strata broker drain` then moves its
//	                   replicas. 404 for an unregistered broker
//	/debug/pprof/      Go's runtime profiles (net/http/pprof), for an operator
//	                   chasing CPU, memory or goroutines; the admin address is
//	                   loopback by default, so keep it off public networks
//
// The JSON endpoints answer 400 for a query parameter they do not take
// (admin_errors.go), rather than ignore it.
//
// Security (admin_auth.go, set by secure before serve): the address is
// served over TLS when given a configuration (the brokers' certificate,
// reloaded as it is renewed), and plain HTTP otherwise. Once security is
// on, /healthz, /readyz and, unless closed, /metrics answer anyone; every
// other endpoint, pprof and the drain included, needs a client certificate
// the TLS configuration verified or the admin token as
// "Authorization: Bearer <token>", and answers 401 with
// WWW-Authenticate: Bearer without one. The token is read from a file and
// read again when the file changes, so it can be rotated.
type adminServer struct {
	server *http.Server
	mux    *http.ServeMux
	log    *slog.Logger
	// tls, when not nil, is what serve wraps the listener with.
	tls *tls.Config
	// token is the admin bearer token; nil: none is accepted.
	token *adminToken
	// authorize is adminSecurity.Authorize.
	authorize func(principal, host string, op acl.Operation) bool
}

// adminHandlers are the functions the admin endpoints call.
type adminHandlers struct {
	gatherer prometheus.Gatherer
	// ready returns nil when the broker can serve, else what it waits for.
	ready func() error
	// status returns the cluster status document.
	status func(ctx context.Context) (any, error)
	// groupLag returns a consumer group's lag document.
	groupLag func(ctx context.Context, group string) (any, error)
	// tierStatus returns the tiering status document (offload.Status), of
	// one topic's partitions when topic is not "".
	tierStatus func(ctx context.Context, topic string) (any, error)
	// drain starts (on) or ends draining broker id.
	drain func(ctx context.Context, id int32, on bool) error
	// state is the metadata this broker holds.
	state func() *meta.State
}

func newAdminServer(h adminHandlers, log *slog.Logger) *adminServer {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(h.gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := h.ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.HandleFunc("GET "+statusPath, func(w http.ResponseWriter, r *http.Request) {
		serveJSON(w, r, h.status)
	})
	mux.HandleFunc("GET "+tierStatusPath, func(w http.ResponseWriter, r *http.Request) {
		serveJSON(w, r, func(ctx context.Context) (any, error) { return h.tierStatus(ctx, r.URL.Query().Get("topic")) })
	})
	mux.HandleFunc("GET "+groupLagPath, func(w http.ResponseWriter, r *http.Request) {
		serveJSON(w, r, func(ctx context.Context) (any, error) { return h.groupLag(ctx, r.PathValue("group")) })
	})
	for method, on := range map[string]bool{"POST": true, "DELETE": false} {
		mux.HandleFunc(method+" "+drainPath, func(w http.ResponseWriter, r *http.Request) {
			serveJSON(w, r, func(ctx context.Context) (any, error) {
				id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
				if err != nil || id < 0 {
					return nil, fmt.Errorf("%w: %q is not a broker id", errAdminBadQuery, r.PathValue("id"))
				}
				if err := h.drain(ctx, int32(id), on); err != nil {
					return nil, err
				}
				return drainState{Broker: int32(id), Draining: on}, nil
			})
		})
	}
	mux.HandleFunc("GET "+tieredPath, func(w http.ResponseWriter, r *http.Request) {
		serveJSON(w, r, func(context.Context) (any, error) { return tieredOf(h.state(), r.PathValue("topic")) })
	})
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return &adminServer{
		server: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)},
		mux:    mux,
		log:    log,
	}
}

// serveJSON answers with the document doc returns, or with its error and
// the status adminErrorStatus gives it (a query parameter the endpoint
// does not take is refused before doc runs).
func serveJSON(w http.ResponseWriter, r *http.Request, doc func(ctx context.Context) (any, error)) {
	if err := checkQuery(r); err != nil {
		http.Error(w, err.Error(), adminErrorStatus(err))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	d, err := doc(ctx)
	if err != nil {
		http.Error(w, err.Error(), adminErrorStatus(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(d)
}

// serve answers on ln until shutdown, over TLS when secure set a TLS
// configuration; it owns ln.
func (s *adminServer) serve(ln net.Listener) error { return serveHTTP(s.server, ln, s.tls) }

// serveHTTP answers on ln with server until it shuts down, over TLS when
// cfg is not nil; it owns ln.
func serveHTTP(server *http.Server, ln net.Listener, cfg *tls.Config) error {
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	if err := server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *adminServer) shutdown(ctx context.Context) error { return s.server.Shutdown(ctx) }
