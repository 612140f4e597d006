package ingest

// ApiVersions: v0-4
//
// Behavior:
//   - The answer is the dispatch table: every API key registered by a
//     numbered file, with the versions its registration carries. An API that
//     is not in the table is absent, never advertised and then refused.
//   - A request at a version we do not answer gets UNSUPPORTED_VERSION in the
//     v0 format (response header v0, no throttle), still listing our versions,
//     so the client can retry with one we support (KIP-511).
//   - v3+: the client software name and version must match Kafka's pattern
//     ([a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?), else INVALID_REQUEST.
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: flexible; client software name and version. The response header
//     stays v0 at every version.
//   - v5 (KIP-1242, cluster and node id checks) is not answered.

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const apiVersionsKey = 18

func init() { register(0, 4, handleAPIVersions) }

// clientSoftwarePattern is Kafka's rule for the v3+ client software fields.
var clientSoftwarePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func handleAPIVersions(_ context.Context, _ *Broker, _ *request, req *kmsg.ApiVersionsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!clientSoftwarePattern.MatchString(req.ClientSoftwareName) || !clientSoftwarePattern.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	resp.ApiKeys = advertisedAPIs()
	return replyWith(resp), nil
}

// apiVersionsUnsupported is the v0 answer to an ApiVersions request at a
// version outside the table.
func apiVersionsUnsupported() reply {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = advertisedAPIs()
	return replyWith(resp)
}

func advertisedAPIs() []kmsg.ApiVersionsResponseApiKey {
	table := supportedAPIs()
	keys := make([]kmsg.ApiVersionsResponseApiKey, 0, len(table))
	for _, a := range table {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.minVersion, a.maxVersion
		keys = append(keys, k)
	}
	return keys
}
