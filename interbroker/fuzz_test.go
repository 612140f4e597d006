package interbroker

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// responseKinds are the requests a follower sends, at the newest version
// this side speaks: the responses a Conn decodes.
func responseKinds() []kmsg.Request {
	reqs := []kmsg.Request{
		kmsg.NewPtrApiVersionsRequest(),
		kmsg.NewPtrSASLHandshakeRequest(),
		kmsg.NewPtrSASLAuthenticateRequest(),
		kmsg.NewPtrFetchRequest(),
		kmsg.NewPtrOffsetForLeaderEpochRequest(),
		kmsg.NewPtrListOffsetsRequest(),
	}
	for _, r := range reqs {
		r.SetVersion(r.MaxVersion())
	}
	return reqs
}

// FuzzDecodeResponse feeds a Conn's decoder whatever a broker, or
// something pretending to be one, might send back: it must return a
// response or an error, never panic or read past the body.
func FuzzDecodeResponse(f *testing.F) {
	for i, req := range responseKinds() {
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		body := binary.BigEndian.AppendUint32(nil, 7)
		if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
			body = append(body, 0) // no tagged fields
		}
		f.Add(uint8(i), resp.AppendTo(body))
	}
	kinds := responseKinds()
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		req := kinds[int(kind)%len(kinds)]
		resp, err := decodeResponse(req, 7, body)
		if (resp == nil) == (err == nil) {
			t.Fatalf("response %v and error %v", resp, err)
		}
	})
}
