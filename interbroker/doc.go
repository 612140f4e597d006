// Package interbroker is the connection a broker opens to another broker:
// a follower's to its leader, for Fetch, OffsetForLeaderEpoch and
// ListOffsets. It speaks the Kafka wire protocol with kmsg over one TCP
// connection, with TLS and SASL (PLAIN, SCRAM) as the inter-broker
// listener asks, and reads every response into one buffer the connection
// keeps.
//
// That buffer is why the package exists. A follower receives every byte
// its leaders take, and a general client (franz-go's kgo) reads each
// response into a fresh buffer the size of the response: with three
// brokers and periodic flushing, those buffers were 82% of the bytes a
// broker allocated and the garbage collector about a fifth of its CPU.
// Read into one buffer, the three brokers' CPU per GB fell by 22-43% and
// RF 3's p99 at half of what it sustains from 35-51 ms to 16-20
// (docs/bench.md, "A follower's fetches read into one buffer"). A
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
// fields alias the Conn's buffer and are valid until its next Request or
// Close. A Conn is owned by one goroutine.
package interbroker
