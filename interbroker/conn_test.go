package interbroker

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Against this package's broker the Conn is tested in ingest
// (interbroker_test.go). Here: how it learns the versions of a broker
// older than itself, which the module's own broker cannot play.

// unsupportedVersions is the UNSUPPORTED_VERSION answer to an ApiVersions
// request a broker does not have, as KIP-511 has it written: at version
// 0, with the given keys.
func unsupportedVersions(keys ...kmsg.ApiVersionsResponseApiKey) []byte {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode, resp.ApiKeys = kerr.UnsupportedVersion.Code, keys
	return resp.AppendTo(binary.BigEndian.AppendUint32(nil, 7))
}

func apiKey(key kmsg.Key, maxVersion int16) kmsg.ApiVersionsResponseApiKey {
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MaxVersion = key.Int16(), maxVersion
	return k
}

func sameKey(a, b kmsg.ApiVersionsResponseApiKey) bool {
	return a.ApiKey == b.ApiKey && a.MinVersion == b.MinVersion && a.MaxVersion == b.MaxVersion
}

// The version-0 answer is read as version 0 whatever version was asked:
// read at the version asked (flexible), its keys were garbage, or
// nothing at all, depending on the first key's bytes.
func TestUnsupportedApiVersionsReadAtVersionZero(t *testing.T) {
	for name, keys := range map[string][]kmsg.ApiVersionsResponseApiKey{
		"every key": {apiKey(kmsg.Produce, 9), apiKey(kmsg.Fetch, 12), apiKey(kmsg.ApiVersions, 3)},
		"KIP-511's": {apiKey(kmsg.ApiVersions, 3)},
	} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(req.MaxVersion())
		resp, err := decodeResponse(req, 7, unsupportedVersions(keys...))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		av := resp.(*kmsg.ApiVersionsResponse)
		if av.ErrorCode != kerr.UnsupportedVersion.Code || !slices.EqualFunc(av.ApiKeys, keys, sameKey) {
			t.Errorf("%s: code %d, keys %+v, want %+v", name, av.ErrorCode, av.ApiKeys, keys)
		}
	}
}

// olderBroker answers ApiVersions as a broker whose newest is version 3
// and that follows KIP-511 strictly: a newer request gets its own range
// alone. It records the version of each ApiVersions request.
func olderBroker(t *testing.T) (addr string, asked <-chan int16) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	versions := make(chan int16, 16)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		for {
			var size [4]byte
			if _, err := io.ReadFull(conn, size[:]); err != nil {
				return
			}
			frame := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(conn, frame); err != nil {
				return
			}
			version, correlation := int16(binary.BigEndian.Uint16(frame[2:])), binary.BigEndian.Uint32(frame[4:])
			versions <- version
			var body []byte
			if version > 3 {
				body = unsupportedVersions(apiKey(kmsg.ApiVersions, 3))
			} else {
				resp := kmsg.NewPtrApiVersionsResponse()
				resp.SetVersion(version)
				resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{apiKey(kmsg.ApiVersions, 3), apiKey(kmsg.Fetch, 12)}
				body = resp.AppendTo(binary.BigEndian.AppendUint32(nil, 7))
			}
			binary.BigEndian.PutUint32(body, correlation)
			if _, err := conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String(), versions
}

func TestVersionsOfAnOlderBroker(t *testing.T) {
	addr, asked := olderBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := Dialer{}.Open(addr)
	defer conn.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	resp, err := conn.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if req.GetVersion() != 3 || len(resp.(*kmsg.ApiVersionsResponse).ApiKeys) != 2 {
		t.Fatalf("asked at version %d, answered %+v", req.GetVersion(), resp)
	}
	// The broker records a request before it answers it: every version
	// asked is in the channel.
	var got []int16
	for len(asked) > 0 {
		got = append(got, <-asked)
	}
	if want := []int16{req.MaxVersion(), 3, 3}; !slices.Equal(got, want) {
		t.Fatalf("ApiVersions asked at versions %v, want %v", got, want)
	}
	if _, err := conn.Request(ctx, kmsg.NewPtrMetadataRequest()); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Metadata, which the broker has no version of: %v, want ErrUnsupported", err)
	}
}

// Built with invariants, a Conn overwrites its last response before it
// reads the next, so bytes of it kept past the next request read as
// garbage in the integration suite's brokers rather than as stale data.
func TestLastResponsePoisoned(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	go func() {
		for _, body := range []string{"first response", "second"} {
			frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
			if _, err := server.Write(frame); err != nil {
				return
			}
		}
	}()
	c := &Conn{conn: client, poison: true}
	first, err := c.readResponse()
	if err != nil {
		t.Fatal(err)
	}
	kept := first[len("second"):]
	if _, err := c.readResponse(); err != nil {
		t.Fatal(err)
	}
	for i, b := range kept {
		if b != 0xA5 {
			t.Fatalf("byte %d of the first response past the second's end is %q, not overwritten", len("second")+i, b)
		}
	}
}
