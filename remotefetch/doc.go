// Package remotefetch reads tiered data: the part of a partition's log that
// offload has moved to the bucket, one segment object per sealed segment
// (segmentobject/doc.go has the format). The broker reads through it every
// offset below its local log start; batch jobs read through it with nothing
// but bucket credentials (BucketReader, behind `strata export`).
//
// # Usage
//
// A broker makes one Reader over its store and its metadata:
//
//	r, err := remotefetch.New(remotefetch.StoreBucket(store), remotefetch.MetaManifests(node.State), cfg)
//	defer r.Close()
//	// Fetch: the partitions whose fetch offset is below the local log start,
//	// read in parallel within remote.fetch.max.wait.ms.
//	results := r.FetchMany(ctx, []remotefetch.Request{{Partition: p, Offset: o, MaxBytes: n}, …})
//	// Once a result's Records are written out: its block's buffer may be reused.
//	results[i].Release()
//	// ListOffsets by timestamp: the tiered log first, then the local one.
//	at, found, err := r.OffsetForTimestamp(ctx, p, ts, localLogStart)
//
// A batch job opens one partition from the bucket:
//
//	b, err := remotefetch.OpenBucketReader(ctx, store, remotefetch.BucketLocation{Topic: "clicks", Partition: 0}, remotefetch.ScanConfig())
//	for batch, err := range b.Batches(ctx, from, to) { … } // batch.Bytes is lent until the next step
//
// # A read
//
// Read (and each partition of FetchMany) goes: manifest (ManifestSource:
// meta's committed segments for the broker, the published manifest.json for
// a batch job) → the segment holding the offset → its index, from the index
// cache or one suffix GET of the segment's tail → the log position to scan
// from (the sparse offset index's entry, or, for a consumer continuing where
// its last read stopped, exactly that position) → the log's blocks, from the
// consumer's read-ahead window, the block cache or a ranged GET → whole
// batches from the one holding the offset, up to MaxBytes but at least one
// (KIP-74), within that one segment and that one block. The result is a
// slice of the cached block, or a copy when its one batch spans two
// blocks.
//
// # Invariants
//
//   - Only verified bytes leave. Every batch returned has passed
//     record.Validate (length, CRC-32C over everything from the attributes
//     on, codec, record count), in the read that returns it or, for a
//     batch wholly inside one block, as the block's GET brought it (the
//     block's bytes never change after); what the CRC
//     does not cover is checked against the segment: the batch lies inside
//     the log and the segment's range, and its base offset is the one a
//     chain from a trusted anchor gives (the offset the checksummed offset
//     index records for the scan's first batch, then each batch starting
//     where the one before ended; segments are dense, as the hot log
//     writes them). A base offset damaged in transit therefore cannot make
//     a read skip or renumber records.
//     Indexes are verified by their section CRCs (segmentobject.ParseTail),
//     and a segment's footer must describe the segment the manifest names
//     (offsets, log size), or the read is ErrCorrupt.
//   - Bad bytes are fetched again once. A read that meets bytes failing
//     verification evicts every block it touched, from the cache and from
//     every read-ahead window, and runs again on blocks fetched afresh
//     (corruption in transit heals); if they fail again, the read returns
//     the verified batches before the bad one, or, when the bad batch is
//     the first, ErrCorrupt, and the blocks are evicted again. A tail that
//     fails its CRCs is fetched once more, then ErrCorrupt.
//   - Every bucket request has a timeout (Config.AttemptTimeout, on the
//     injected Clock), is retried on transient failure (5xx, reset, short
//     or stalled body, timeout) with capped exponential backoff and jitter
//     up to MaxAttempts, then ErrUnavailable; a missing object is
//     ErrSegmentMissing at once. Every wait honours the caller's context.
//   - No goroutine outlives Close. Block and index loads belong to the
//     Reader's lifecycle (flight.go) and are cancelled and waited for in
//     Close; an attempt's timeout watchdog belongs to the attempt;
//     FetchMany's workers to the call; ristretto's two goroutines to the
//     block cache, stopped in Close.
//
// # Caches
//
// Indexes and blocks are cached apart, as Kafka's RemoteIndexCache keeps
// indexes apart from data: a read needs the index before any block, and a
// scan's blocks must not push indexes out.
//
// The index cache (indexcache.go) is an LRU with a byte budget
// (IndexCacheBytes; an index costs its tail's length) that admits every
// index. A manifest that records the tail size (the bucket manifest does;
// meta does not) gets the tail in one suffix GET; otherwise IndexTailGuess
// is fetched, which covers a default 128 MiB segment, and a short guess
// costs one more GET of the size the footer names.
//
// The block cache (blockcache.go) holds BlockSize-aligned blocks of segment
// logs (never the tails) in ristretto, with a byte budget (BlockCacheBytes)
// and ristretto's sharded store, TinyLFU admission and sampled-LFU
// eviction; Metrics reports its hits, misses, merged misses, evictions,
// rejections, size and budget, as pebble's shared cache does. Concurrent
// misses of one block make one GET (flight.go: singleflight with typed
// keys): the first starts the load, later ones wait for it. A load runs
// under the Reader's lifetime, not a caller's: when its last waiter gives
// up it is cancelled, unless it is a prefetch or was cut short by
// FetchMany's deadline, which run to the end and warm the cache for the
// client's next fetch.
//
// TinyLFU is right for a shared cache and wrong for a scan: a block a
// catch-up consumer is about to read has been seen once and loses
// admission to blocks read many times. So read-ahead does not rely on the
// cache (readahead.go): a consumer whose read starts where its last one
// ended is sequential, and its stream keeps a window of the blocks it uses
// next, the current one and ReadAheadBlocks more, prefetched in the
// background and held until it has read past them, however full the cache
// is. Windows share a byte budget (ReadAheadBytes) and streams are bounded
// (MaxStreams, four per partition, least recently used first out), so
// read-ahead memory is bounded too. A sequential consumer makes one GET
// per block.
//
// # Block size
//
// The default BlockSize, 8 MiB, was chosen by measurement: the cold
// catch-up benchmark (bench_test.go: one consumer, 4 partitions of 2
// segments of 32 MiB, 1 MiB per partition per fetch) against versitygw on
// loopback, on the project's 2-core machine shared with other work, the
// read-ahead distance held at 16 MiB for every size, limits measured in
// the same run (go test -run '^$' -bench . -benchtime 10x ./remotefetch/;
// the limits then were ranged GETs at the reader's own peak in flight and
// one object streamed at a time, docs/bench.md has the best-of-sweep ones):
//
//	block  cold MB/s  ranged-GET limit  x-limit  whole-object GET  x-stream  GETs/MiB
//	1 MiB     620          760           0.82         1547           0.40      1.06
//	2 MiB     580          922           0.63         1322           0.44      0.56
//	4 MiB    1053         1681           0.63         1300           0.81      0.31
//	8 MiB    1485         2214           0.67         1945           0.76      0.19
//
// (MB is 10^6 bytes; figures move by a fifth from run to run with the
// machine's other load, the ranking does not.) Per-request overhead (SigV4
// signing, an HTTP round trip, a goroutine and a cache insert per block)
// is what small blocks lose to: cold throughput more than doubles from 1
// to 8 MiB while GETs per MiB fall from one to a fifth, and only from
// 4 MiB does a cold read pass half a whole-object GET. S3's guidance for
// throughput is 8–16 MB ranges, and its price per request favours large
// blocks as much. The cost is granularity: a random read fetches up to
// 8 MiB, and each GET in flight holds 8 MiB (MaxConcurrentGets × BlockSize
// bounds that memory: 256 MiB by default). Larger blocks would add little
// here and add latency to a cold read's first batch on a real bucket
// (about 100 ms per 8 MiB at S3's usual 80–100 MB/s per connection, within
// remote.fetch.max.wait.ms).
//
// A cold read makes 0.74-0.78 of ranged GETs of 8 MiB at the best of 1 to
// 32 in flight, 0.80-0.87 at 1, 2 and 4 MiB (docs/bench.md, "Cold reads:
// block buffers recycled"); the benchmark reads with a Reader that has run
// before, through a block cache smaller than the data, as a broker does.
// Block buffers are recycled (blockbuf.go): a fresh, zeroed 8 MiB buffer
// per block, whose pages fault in again, had cost up to two fifths of the
// reader's CPU, and a cached block can live in a reused buffer because
// every holder counts. A read's batches lie in one block, so they are a
// slice of it, never a copy (collect). The CRC-32C of every byte, which
// the bare GET loop does not make, runs for most batches as the GET brings
// the block, 64 KiB at a time, while the bytes are in the CPU's cache
// (checker.go): a fifth to a half of its cost when the read made it, the
// bytes by then back in memory (after the whole 8 MiB GET is already too
// late). Batches before the first one the index knows in a block, and
// those spanning blocks, are still checked by the read. With the bucket on
// another machine, as in production, none of this CPU is taken from the
// server.
//
// # Timestamps
//
// OffsetForTimestamp answers ListOffsets by timestamp below the local log:
// segments in offset order that start below it (the hot log answers from
// its start on) and whose manifest max timestamp reaches ts, the
// time index to the scan's start, then the verified batches' records
// (decompressed up to MaxUncompressedSize) for the first at or after ts.
//
// # The bucket manifest
//
// BucketReader reads [<key prefix>/]<topic>-<topic id>/<partition>/manifest.json
// (segmentobject/key.go: <topic> cut to 218 bytes; found by listing, a cut
// name is told from others of the same first bytes by the name in the
// manifest), which offload publishes after every change to the partition's
// committed segments. The format and its one Go type are segmentobject's
// (segmentobject.Manifest, version 1); segmentobject.ParseManifest
// decodes and checks it, and this package refuses, besides, a manifest of
// another partition or topic id. Without a topic id, the bucket is listed
// for the one the topic has. A batch job links segmentobject, not the
// broker's upload machinery. The broker's manifests are the same type:
// MetaManifests and FromMeta take meta's committed manifest
// (meta.Manifest.Committed), which has no tail sizes.
//
// # Metrics
//
// Registered with Config.Registerer (nil: none), and in Metrics():
//
//	strata_remotefetch_reads_total{outcome}                 success, out_of_range, missing, corrupt, unavailable, timeout, canceled, error
//	strata_remotefetch_read_bytes_total                     verified batch bytes returned
//	strata_remotefetch_read_duration_seconds                latency of successful reads
//	strata_remotefetch_bucket_requests_total{kind,outcome}  GET attempts: kind block or index
//	strata_remotefetch_bucket_request_duration_seconds{kind}
//	strata_remotefetch_bucket_read_bytes_total{kind}
//	strata_remotefetch_bucket_retries_total{kind}
//	strata_remotefetch_gets_per_mib                         GETs per MiB returned, since start
//	strata_remotefetch_cache_lookups_total{cache,result}    hit, readahead (block cache only), miss, merged
//	strata_remotefetch_cache_hit_ratio{cache}               block or index, since start
//	strata_remotefetch_cache_bytes{cache}
//	strata_remotefetch_cache_capacity_bytes{cache}
//	strata_remotefetch_cache_evictions_total{cache}
//	strata_remotefetch_cache_rejections_total{cache}        TinyLFU refusals (block cache)
//	strata_remotefetch_block_buffers_reused_total           blocks loaded into a released block's buffer
//	strata_remotefetch_block_buffer_bytes                   block buffers held: cache, windows, reads, unsent responses
//	strata_remotefetch_prefetches_total
//	strata_remotefetch_corrupt_reads_total{outcome}         recovered, failed
//	strata_remotefetch_fetch_timeouts_total                 partitions cut off at remote.fetch.max.wait.ms
//
// GETs per MiB over an interval:
//
//	sum(rate(strata_remotefetch_bucket_requests_total[5m])) / (rate(strata_remotefetch_read_bytes_total[5m]) / 2^20)
//
// # Lock order
//
// readAhead.mu, then a flightGroup's mu, then lifecycle.mu; a flight's
// held lock may be taken under either of the first two; blockCache.mu
// (around ristretto), indexCache.mu and the held lock are leaves.
package remotefetch
