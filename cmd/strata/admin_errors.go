package main

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/stratalog/strata/meta"
	"github.com/stratalog/strata/offload"
)

// The admin JSON endpoints answer a request they cannot honour with a
// status and a one-line message, never with an empty document that looks
// like an answer: 400 for a query parameter the endpoint does not take (or
// an empty one), 404 for a topic or group the broker does not know, 503
// when the broker cannot answer yet.

// errAdminNotFound is a topic or group the broker does not know: 404.
var errAdminNotFound = errors.New("not found")

// errAdminBadQuery is a query parameter the endpoint does not take: 400.
var errAdminBadQuery = errors.New("bad query")

// adminQueryParams are the query parameters each JSON endpoint takes, by
// its mux pattern; any other is refused rather than silently ignored.
var adminQueryParams = map[string][]string{
	"GET " + statusPath:     nil,
	"GET " + tierStatusPath: {"topic"},
	"GET " + groupLagPath:   nil,
	"POST " + drainPath:     nil,
	"GET " + tieredPath:     nil,
	"DELETE " + drainPath:   nil,
}

// checkQuery refuses a query parameter the endpoint of r does not take,
// and one it takes given empty or twice.
func checkQuery(r *http.Request) error {
	allowed := adminQueryParams[r.Pattern]
	query := r.URL.Query()
	names := make([]string, 0, len(query))
	for name := range query {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		values := query[name]
		switch {
		case !slices.Contains(allowed, name):
			takes := "takes no query parameters"
			if len(allowed) > 0 {
				takes = "takes only " + strings.Join(allowed, ", ")
			}
			return fmt.Errorf("%w: %s %s: unknown query parameter %q", errAdminBadQuery, r.URL.Path, takes, name)
		case len(values) != 1 || values[0] == "":
			return fmt.Errorf("%w: %s: give %s once, not empty", errAdminBadQuery, r.URL.Path, name)
		}
	}
	return nil
}

// adminErrorStatus is the HTTP status an admin endpoint's error answers
// with.
func adminErrorStatus(err error) int {
	switch {
	case errors.Is(err, errAdminNotFound):
		return http.StatusNotFound
	case errors.Is(err, errAdminBadQuery):
		return http.StatusBadRequest
	case errors.Is(err, meta.ErrUnknownBroker):
		return http.StatusNotFound
	}
	return http.StatusServiceUnavailable
}

// tierStatusOf is the /v1/tier/status document: status, or only topic's
// partitions when topic is not "". A topic the metadata does not have is
// errAdminNotFound; a topic it has but this broker tiers no partition of
// has an empty list.
func tierStatusOf(status offload.Status, st *meta.State, topic string) (offload.Status, error) {
	if topic == "" {
		return status, nil
	}
	if _, ok := st.Topic(topic); !ok {
		return offload.Status{}, fmt.Errorf("%w: no topic %q (`strata topic list` lists the topics)", errAdminNotFound, topic)
	}
	kept := []offload.PartitionStatus{}
	for _, p := range status.Partitions {
		if p.Topic == topic {
			kept = append(kept, p)
		}
	}
	status.Partitions = kept
	return status, nil
}
