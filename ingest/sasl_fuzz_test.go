package ingest

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzSASLConn feeds arbitrary bytes to a connection of a SASL listener.
// The broker must not panic, must close the connection when serving ends,
// and, unless the bytes logged in (the corpus holds a good PLAIN login),
// must answer nothing but ApiVersions, SaslHandshake and SaslAuthenticate.
func FuzzSASLConn(f *testing.F) {
	b := newSASLBroker(f, func(c *Config) { c.MaxRequestBytes = fuzzFrameLimit })
	frame := func(req kmsg.Request, version int16, correlationID int32) []byte {
		req.SetVersion(version)
		return encodeRequest(req, correlationID)
	}
	handshake := kmsg.NewPtrSASLHandshakeRequest()
	handshake.Mechanism = "PLAIN"
	login := kmsg.NewPtrSASLAuthenticateRequest()
	login.SASLAuthBytes = []byte("\x00alice\x00alice-secret")
	wrong := kmsg.NewPtrSASLAuthenticateRequest()
	wrong.SASLAuthBytes = []byte("\x00alice\x00guess")
	scramFirst := kmsg.NewPtrSASLHandshakeRequest()
	scramFirst.Mechanism = "SCRAM-SHA-512"
	scramStep := kmsg.NewPtrSASLAuthenticateRequest()
	scramStep.SASLAuthBytes = []byte("n,,n=alice,r=abcdefgh")
	metadata := kmsg.NewPtrMetadataRequest()
	f.Add(slices.Concat(frame(handshake, 1, 1), frame(login, 1, 2), frame(metadata, 12, 3)))
	f.Add(slices.Concat(frame(handshake, 1, 1), frame(wrong, 1, 2), frame(metadata, 12, 3)))
	f.Add(slices.Concat(frame(metadata, 12, 1), frame(handshake, 1, 2)))
	f.Add(slices.Concat(frame(kmsg.NewPtrApiVersionsRequest(), 2, 1), frame(scramFirst, 1, 2), frame(scramStep, 2, 3), frame(metadata, 4, 4)))
	f.Add(slices.Concat(frame(login, 0, 1), frame(metadata, 1, 2)))
	f.Fuzz(func(t *testing.T, script []byte) {
		socket := newScriptedConn(script)
		c := newConn(b, socket, b.config.Listeners[0])
		c.serve(context.Background())
		if !socket.closed {
			t.Fatal("the connection was not closed when serving ended")
		}
		if c.session.authenticated.Load() {
			return
		}
		// The requests in the script, to match answers with by
		// correlation id, in order.
		type sent struct {
			key int16
			id  int32
		}
		var requests []sent
		for pos := 0; pos+frameSizeBytes <= len(script); {
			size := int(binary.BigEndian.Uint32(script[pos:]))
			if size < requestHeaderMinBytes || size > fuzzFrameLimit || pos+frameSizeBytes+size > len(script) {
				break
			}
			h := peekHeader(script[pos+frameSizeBytes : pos+frameSizeBytes+size])
			requests = append(requests, sent{h.key, h.correlationID})
			pos += frameSizeBytes + size
		}
		out := socket.written.Bytes()
		next := 0
		for len(out) >= 8 {
			size := int(binary.BigEndian.Uint32(out))
			id := int32(binary.BigEndian.Uint32(out[4:]))
			for next < len(requests) && requests[next].id != id {
				next++
			}
			if next == len(requests) {
				t.Fatalf("an answer with correlation id %d matches no request", id)
			}
			switch key := requests[next].key; key {
			case apiVersionsKey, saslHandshakeKey, saslAuthenticateKey:
			default:
				t.Fatalf("%s (correlation id %d) was answered without a login", kmsg.NameForKey(key), id)
			}
			next++
			if size+4 > len(out) {
				break
			}
			out = out[4+size:]
		}
	})
}
