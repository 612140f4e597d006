// Package interbroker is the connection a broker opens to another broker:
// a follower's to its leader, for Fetch, OffsetForLeaderEpoch and
// ListOffsets. It speaks the Kafka wire protocol with kmsg over one TCP
// connection, with TLS and SASL (PLAIN, SCRAM) as the inter-broker
// listener asks, and reads every response into one buffer the connection
// keeps.
//
// That buffer is why the package exists. A follower receives every byte
// its leaders take, and a general client (franz-go's kgo) reads each
// response into a fresh buffer the size of the response, which at RF 3
// made most of the bytes a broker allocated and kept its garbage collector
// busy (docs/bench.md, "A follower's fetches read into one buffer"). A
// follower's responses are appended to its log (pwrite copies them) before
// it sends the next request, so one buffer, reused, is all it needs.
//
// # Use
//
// A Dialer says how to connect (Dialer.Open); a Conn sends one request at
// a time (Conn.Request) and dials, or dials again after any failure, when
// a request needs it: it asks the broker's versions (ApiVersions) and
// authenticates first, and authenticates again on the same connection
// before the session the broker granted ends (KIP-368). A response's byte
// fields alias the Conn's buffer and are valid until its next Request. A
// Conn is owned by one goroutine.
package interbroker
