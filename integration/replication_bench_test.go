package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// asTest runs scenario as a test named after b, so that a benchmark can
// use the cluster helpers, which take a *testing.T (startCluster,
// replicatedTopic, createReplicated, waitPartitions, leaderOf,
// scrapeMetrics). The scenario's cleanups, the servers' stops among them,
// run when it returns, so everything measured happens inside it. A failed
// scenario fails b. With -count n, testing runs the scenario n times.
func asTest(b *testing.B, scenario func(t *testing.T)) {
	b.Helper()
	matchAll := func(string, string) (bool, error) { return true, nil }
	if !testing.RunTests(matchAll, []testing.InternalTest{{Name: b.Name(), F: scenario}}) {
		b.FailNow()
	}
}

// replicationBenchRecords is how many 1 KiB records measure one peak.
const replicationBenchRecords = 100_000

// BenchmarkReplicatedProduce's steps: replicationSustain is how long it
// produces flat out to measure what RF 3 sustains, as long as
// BenchmarkSustainedProduce's default run, past what the page cache takes
// in with flush.ms set (in one run each, 20 s flat out measured 180 MB/s
// and a minute 153, and RF 3's p99 at half of each was 170 and 23 ms).
// replicationUploadWait is the longest it waits for the uploads a load
// left. replicationSegmentBytes is its topics' segment.bytes: at the
// 49-82 MB/s this machine's disk gave as half of what RF 3 sustains,
// every one of the 8 partitions rolls four to seven times in a paced load,
// so uploads run in it. replicationLocalRetention is their
// local.retention.bytes, which a leader applies after each upload
// (followers only at their retention check, every five minutes, so never
// within a run): a minute flat out writes each byte four times (three
// copies and the bucket, here on the same disk), and with the leaders'
// copies kept too the hot disk reached the brokers' full mark.
const (
	replicationSustain        = time.Minute
	replicationUploadWait     = 2 * time.Minute
	replicationSegmentBytes   = 16 << 20
	replicationLocalRetention = 256 << 20
)

// copyConfigs is configs in a fresh map: replicatedTopic adds to the one
// it is given.
func copyConfigs(configs map[string]*string) map[string]*string {
	out := map[string]*string{}
	for k, v := range configs {
		out[k] = v
	}
	return out
}

// clusterUploadLag is the bytes of sealed segments the servers have not
// yet tiered (each reports the partitions it leads).
func clusterUploadLag(t *testing.T, servers ...*server) int64 {
	t.Helper()
	var lag int64
	for _, s := range servers {
		lag += uploadLag(t, s)
	}
	return lag
}

// serversCPUSeconds is the servers' user and system CPU time, together.
func serversCPUSeconds(t *testing.T, servers ...*server) float64 {
	t.Helper()
	var total float64
	for _, s := range servers {
		user, system := processCPUSeconds(t, s.cmd.Process.Pid)
		total += user + system
	}
	return total
}

// awaitUploads waits until the servers have tiered every sealed segment,
// or for at most d, and returns the bytes still waiting.
func awaitUploads(t *testing.T, d time.Duration, servers ...*server) int64 {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		lag := clusterUploadLag(t, servers...)
		if lag == 0 || time.Now().After(deadline) {
			return lag
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// millis is d in (fractional) milliseconds, for b.ReportMetric.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkReplicatedProduce measures one franz-go producer (the client of
// BenchmarkProduce: 1 KiB records, 8 partitions, acks=all, linger 5 ms, no
// compression) against three brokers with RF 3 and min.insync.replicas 2,
// beside one broker with RF 1, in the same run: the peak of a burst of
// 100,000 records (MB/s and records/s of each, and RF 3 ÷ RF 1 as x-rf1);
// what RF 3 sustains, flat out for replicationSustain while its segments
// seal and upload (rf3-sustained-MB/s, its slowest 10 s
// rf3-sustained-worst-10s-MB/s); then, once the uploads that run left are
// done (at most replicationUploadWait: what is left is
// rf3-upload-lag-before-MB), the open-loop latency of RF 3 and then of RF
// 1 at half of what RF 3 sustained (paced-MB/s: the rule is p99 at
// half of what RF 3 sustains; a burst's peak, with no roll or upload in
// it and, with flush.ms, taken in by the page cache, overstates it) for
// tieringLoadDuration each: p50, p99 and the highest p99 of any one second
// from each record's scheduled send, and the upload lag at the load's end
// (rf3-upload-lag-MB, rf1-upload-lag-MB). Each load's CPU time runs on
// until its uploads are done too (or replicationUploadWait), so the next
// load does not share the cores with them: rf1-broker-cpu-s/GB, and the
// three brokers' together as rf3-brokers-cpu-s/GB (three copies' work,
// the replication between them and the leaders' uploads, on cores the
// client shares), per GB acknowledged in the load. Both topics have
// segments of replicationSegmentBytes, so segments seal and upload in the
// paced loads as in the sustained run, and local.retention.bytes of
// replicationLocalRetention. Twice: with the default durability (every
// ISR member fsyncs before it acknowledges) and with flush.ms set
// (periodic flushing: each member acknowledges from the page cache). With
// the default, beside them the same client against a replicated sink (a
// leader and two followers in this process, startReplicatedSink), the
// bound for three copies with fsync before ack on this machine, once the
// brokers have stopped: its burst peak (x-rf3-sink is RF 3's peak over it)
// and its latency at the same paced rate. (Periodic flushing has none: a
// sink answering on write had its p99 stalled by the page cache's
// writeback, 9-84 ms without a flush and 262-424 ms with one a second; a
// bound for it would have to pace its writeback as the broker does.)
// With STRATA_BENCH_PROFILE set, the first broker's profiles are taken
// during RF 3's paced load (profileBroker, named rf3-<mode>).
func BenchmarkReplicatedProduce(b *testing.B) {
	for _, mode := range []struct {
		name    string
		configs map[string]*string
		sink    bool // measure the replicated sink beside RF 3
	}{
		{"fsync-before-ack", nil, true},
		{"flush.ms", map[string]*string{"flush.ms": kadm.StringPtr("1000")}, false},
	} {
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				asTest(b, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
					defer cancel()
					value := 1024.0

					single := startServer(t)
					topicConfigs := func() map[string]*string {
						configs := copyConfigs(mode.configs)
						configs["segment.bytes"] = kadm.StringPtr(strconv.Itoa(replicationSegmentBytes))
						configs["local.retention.bytes"] = kadm.StringPtr(strconv.Itoa(replicationLocalRetention))
						return configs
					}
					createTopic(t, single, "bench", 8, topicConfigs())
					cl1 := benchProducer(b, single.kafka)
					producePeak(b, cl1, 10_000) // connections, producer id, metadata
					rf1 := producePeak(b, cl1, replicationBenchRecords)

					servers := startCluster(t, 3)
					admin := kadm.NewClient(newClientSeeds(t, kafkaAddresses(servers)))
					replicatedTopic(ctx, t, admin, "bench", 8, topicConfigs())
					cl3 := benchProducer(b, servers[0].kafka)
					producePeak(b, cl3, 10_000)
					rf3 := producePeak(b, cl3, replicationBenchRecords)

					sustained, worst := sustain(t, cl3, replicationSustain)
					lagBefore := awaitUploads(t, replicationUploadWait, servers...)
					paced := sustained / 2
					cpu := serversCPUSeconds(t, servers...)
					profiled := profileBroker(t, servers[0], "rf3-"+mode.name)
					rf3Paced := openLoop(t, []*kgo.Client{cl3}, paced, tieringLoadDuration)
					profiled()
					rf3Lag := clusterUploadLag(t, servers...)
					awaitUploads(t, replicationUploadWait, servers...)
					rf3CPU := serversCPUSeconds(t, servers...) - cpu
					cpu = serversCPUSeconds(t, single)
					rf1Paced := openLoop(t, []*kgo.Client{cl1}, paced, tieringLoadDuration)
					rf1Lag := clusterUploadLag(t, single)
					awaitUploads(t, replicationUploadWait, single)
					rf1CPU := serversCPUSeconds(t, single) - cpu
					cl1.Close()
					cl3.Close()

					b.ReportMetric(rf1/1e6, "rf1-MB/s")
					b.ReportMetric(rf1/value, "rf1-records/s")
					b.ReportMetric(rf3/1e6, "rf3-MB/s")
					b.ReportMetric(rf3/value, "rf3-records/s")
					b.ReportMetric(rf3/rf1, "x-rf1")
					b.ReportMetric(sustained/1e6, "rf3-sustained-MB/s")
					b.ReportMetric(worst/1e6, "rf3-sustained-worst-10s-MB/s")
					b.ReportMetric(float64(lagBefore)/1e6, "rf3-upload-lag-before-MB")
					b.ReportMetric(float64(rf3Lag)/1e6, "rf3-upload-lag-MB")
					b.ReportMetric(float64(rf1Lag)/1e6, "rf1-upload-lag-MB")
					b.ReportMetric(paced/1e6, "paced-MB/s")
					b.ReportMetric(rf1Paced.acked/1e6, "rf1-paced-acked-MB/s")
					b.ReportMetric(rf3Paced.acked/1e6, "rf3-paced-acked-MB/s")
					b.ReportMetric(millis(rf1Paced.p50), "rf1-p50-ms")
					b.ReportMetric(millis(rf1Paced.p99), "rf1-p99-ms")
					b.ReportMetric(millis(rf3Paced.p50), "rf3-p50-ms")
					b.ReportMetric(millis(rf3Paced.p99), "rf3-p99-ms")
					b.ReportMetric(millis(rf1Paced.worstSecondP99), "rf1-worst-second-p99-ms")
					b.ReportMetric(millis(rf3Paced.worstSecondP99), "rf3-worst-second-p99-ms")
					b.ReportMetric(rf1CPU/rf1Paced.ackedGB(), "rf1-broker-cpu-s/GB")
					b.ReportMetric(rf3CPU/rf3Paced.ackedGB(), "rf3-brokers-cpu-s/GB")
					t.Logf("RF 3 p99 by second of the paced load, ms: %s", formatSeconds(rf3Paced.secondP99s))
					if !mode.sink {
						return
					}
					// The brokers stop first: the sink's copies share the disk
					// and the cores with nothing else.
					single.stop()
					for _, s := range servers {
						s.stop()
					}
					sinkAddress := freePort(t)
					sink := startReplicatedSink(t, sinkAddress, "bench", 8, t.TempDir(), replicatedSinkConfig{followers: 2})
					clSink := benchProducer(b, sinkAddress)
					producePeak(b, clSink, 10_000)
					sinkPeak := producePeak(b, clSink, replicationBenchRecords)
					sinkPaced := openLoop(t, []*kgo.Client{clSink}, paced, tieringLoadDuration)
					clSink.Close()
					sink.close()
					b.ReportMetric(sinkPeak/1e6, "rf3-sink-MB/s")
					b.ReportMetric(rf3/sinkPeak, "x-rf3-sink")
					b.ReportMetric(sinkPaced.acked/1e6, "rf3-sink-paced-acked-MB/s")
					b.ReportMetric(millis(sinkPaced.p50), "rf3-sink-p50-ms")
					b.ReportMetric(millis(sinkPaced.p99), "rf3-sink-p99-ms")
					b.ReportMetric(millis(sinkPaced.worstSecondP99), "rf3-sink-worst-second-p99-ms")
				})
			}
		})
	}
}

// logEndOn is partition 0 of topic's log end offset on s, from /metrics.
func logEndOn(t *testing.T, s *server, topic string) int64 {
	t.Helper()
	return int64(scrapeMetrics(t, s).value(t, "strata_ingest_log_end_offset", "topic", topic, "partition", "0"))
}

// catchUpBytes is how much the stopped follower of
// BenchmarkFollowerCatchUp has to fetch, STRATA_BENCH_CATCHUP_BYTES or
// 64 MiB.
func catchUpBytes(t testing.TB) int {
	if v := os.Getenv("STRATA_BENCH_CATCHUP_BYTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("STRATA_BENCH_CATCHUP_BYTES: %v", err)
		}
		return n
	}
	return 64 << 20
}

// BenchmarkFollowerCatchUp: one partition on brokers 1 (leader), 2 and 3;
// follower 3 is stopped with SIGSTOP (for less than the 4 s session
// timeout, so it stays a replica and in the metadata), 64 MiB of 1 KiB
// records are written at acks=1 meanwhile, then it continues and the
// benchmark times until its log end (strata_ingest_log_end_offset on its
// /metrics, polled every 20 ms) reaches the leader's: catch-up-MB/s.
// Beside it, in the same run, a franz-go consumer reads the same records
// from the leader: hot-fetch-MB/s, and x-hot-fetch is their ratio.
func BenchmarkFollowerCatchUp(b *testing.B) {
	for range b.N {
		asTest(b, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			servers := startCluster(t, 3)
			cl := newClientSeeds(t, kafkaAddresses(servers))
			const topic = "catchup"
			createReplicated(ctx, t, cl, topic, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, 1, 2, 3)
			leader, follower := servers[0], servers[2]
			producer := newClientSeeds(t, kafkaAddresses(servers), kgo.DefaultProduceTopic(topic),
				kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
				kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()))
			produceN := func(n int) {
				value := make([]byte, 1024)
				for range n {
					producer.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
						if err != nil {
							t.Error(err)
						}
					})
				}
				if err := producer.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			produceN(1000) // connections and metadata
			for logEndOn(t, follower, topic) < 1000 {
				time.Sleep(20 * time.Millisecond)
			}

			records := catchUpBytes(t) / 1024
			follower.pause()
			paused := time.Now()
			produceN(records)
			end := logEndOn(t, leader, topic)
			if held := time.Since(paused); held > 3*time.Second {
				t.Logf("the follower was stopped %v, near the session timeout: it may have been fenced", held)
			}
			start := time.Now()
			follower.resume()
			for logEndOn(t, follower, topic) < end {
				time.Sleep(20 * time.Millisecond)
			}
			catchUp := time.Since(start)

			consumer := newClientSeeds(t, []string{leader.kafka},
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(1000)}}))
			start = time.Now()
			for read := 0; read < records; {
				fetches := consumer.PollFetches(ctx)
				if err := fetches.Err(); err != nil {
					t.Fatal(err)
				}
				read += fetches.NumRecords()
			}
			hotFetch := time.Since(start)

			bytes := float64(records * 1024)
			b.ReportMetric(bytes/catchUp.Seconds()/1e6, "catch-up-MB/s")
			b.ReportMetric(bytes/hotFetch.Seconds()/1e6, "hot-fetch-MB/s")
			b.ReportMetric(hotFetch.Seconds()/catchUp.Seconds(), "x-hot-fetch")
		})
	}
}

// BenchmarkFailover: three brokers, one partition with RF 3 and
// min.insync.replicas 2, a franz-go producer sending one acks=all record
// at a time in a loop (metadata refreshed at most every 100 ms, so the
// client's own back-off adds little). The leader is killed with SIGKILL:
// failover-s is from the kill to the first acknowledgement after it,
// beside goal-s, broker.session.timeout.ms (4 s in these clusters) + 2 s.
// Once the killed broker is back in the ISR, the new leader is stopped
// with SIGTERM: controlled-move-s is from the signal to the metadata
// naming another leader (asked of the two others every 50 ms), beside
// the goal of 1 s.
func BenchmarkFailover(b *testing.B) {
	for range b.N {
		asTest(b, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			servers := startCluster(t, 3)
			seeds := kafkaAddresses(servers)
			admin := kadm.NewClient(newClientSeeds(t, seeds))
			const topic = "failover"
			replicatedTopic(ctx, t, admin, topic, 1, nil)
			producer := newClientSeeds(t, seeds, kgo.DefaultProduceTopic(topic),
				kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MetadataMinAge(100*time.Millisecond))

			var (
				mu    sync.Mutex
				acked []time.Time
			)
			loopCtx, stopLoop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				for loopCtx.Err() == nil {
					r := &kgo.Record{Value: []byte("failover"), Timestamp: time.Now()}
					if err := producer.ProduceSync(loopCtx, r).FirstErr(); err == nil {
						mu.Lock()
						acked = append(acked, time.Now())
						mu.Unlock()
					}
				}
			}()
			defer func() { stopLoop(); <-done }()
			firstAckAfter := func(since time.Time) time.Duration {
				for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					mu.Lock()
					i, _ := slices.BinarySearchFunc(acked, since, func(a, s time.Time) int { return a.Compare(s) })
					var at time.Time
					if i < len(acked) {
						at = acked[i]
					}
					mu.Unlock()
					if !at.IsZero() {
						return at.Sub(since)
					}
				}
				t.Fatal("no produce acknowledged within a minute of losing the leader")
				return 0
			}
			firstAckAfter(time.Now()) // the loop runs

			leader := leaderOf(ctx, t, admin, topic, 0)
			killedAt := time.Now()
			servers[leader-1].kill()
			failover := firstAckAfter(killedAt)
			servers[leader-1].restart()
			waitPartitions(ctx, t, admin, topic, "the killed broker back in the ISR", func(p kadm.PartitionDetail) bool {
				return p.Leader >= 0 && len(p.ISR) == 3
			})

			leader = leaderOf(ctx, t, admin, topic, 0)
			// Asked of the other two, so that no poll waits on the broker
			// shutting down.
			var others []string
			for i, s := range servers {
				if int32(i+1) != leader {
					others = append(others, s.kafka)
				}
			}
			othersAdmin := kadm.NewClient(newClientSeeds(t, others))
			// A full ISR first: a leader alone in its ISR has nobody to hand
			// its leadership to, and the move would wait for a follower.
			waitPartitions(ctx, t, othersAdmin, topic, "the others naming the same leader, with a full ISR", func(p kadm.PartitionDetail) bool {
				return p.Leader == leader && len(p.ISR) == 3
			})
			stopped := make(chan struct{})
			signalled := time.Now()
			go func() { defer close(stopped); servers[leader-1].stop() }()
			// Each poll goes to one of the others by its seed connection:
			// a client left to choose could send it to the broker
			// draining its connections, and wait there.
			var probes []*kgo.Client
			for i, s := range servers {
				if int32(i+1) != leader {
					probes = append(probes, newClient(t, s))
				}
			}
			for newLeader := false; !newLeader; time.Sleep(5 * time.Millisecond) {
				for _, probe := range probes {
					req := kmsg.NewPtrMetadataRequest()
					rt := kmsg.NewMetadataRequestTopic()
					rt.Topic = kmsg.StringPtr(topic)
					req.Topics = append(req.Topics, rt)
					resp, err := probe.SeedBrokers()[0].Request(ctx, req)
					if err != nil {
						continue
					}
					md := resp.(*kmsg.MetadataResponse)
					if len(md.Topics) == 1 && len(md.Topics[0].Partitions) == 1 {
						if l := md.Topics[0].Partitions[0].Leader; l >= 0 && l != leader {
							newLeader = true
						}
					}
				}
				if ctx.Err() != nil {
					t.Fatal("no other leader named")
				}
			}
			moved := time.Since(signalled)
			<-stopped

			b.ReportMetric(failover.Seconds(), "failover-s")
			b.ReportMetric(4+2, "goal-s")
			b.ReportMetric(moved.Seconds(), "controlled-move-s")
			b.ReportMetric(1, "controlled-goal-s")
		})
	}
}

// historyBytes is the tiered history of BenchmarkEmptyReplicaJoinsISR,
// STRATA_BENCH_HISTORY_BYTES or 64 MiB.
func historyBytes(t testing.TB) int {
	if v := os.Getenv("STRATA_BENCH_HISTORY_BYTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("STRATA_BENCH_HISTORY_BYTES: %v", err)
		}
		return n
	}
	return 64 << 20
}

// BenchmarkEmptyReplicaJoinsISR is TestEmptyReplicaStartsAtTheTieredBoundary
// timed: five brokers (voters 1-3), a tiered topic on brokers 4 (leader),
// 5 and 3 with 1 MiB segments and 2 MiB of local retention, and a history
// of STRATA_BENCH_HISTORY_BYTES (64 MiB unless set) of 1 KiB records,
// tiered until the leader keeps only a few segments. Follower 5 is killed,
// its partitions directory removed, and it restarts: join-s is from the
// restart to the metadata showing it in the ISR (polled every 50 ms),
// ready-s the part of that until its /readyz answers. The goal is flat in
// the history: a few seconds.
func BenchmarkEmptyReplicaJoinsISR(b *testing.B) {
	for range b.N {
		asTest(b, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			servers := startClusterOf(t, 5, 3, "--bucket", "file://"+t.TempDir(), "--remote.log.manager.task.interval.ms", "200")
			seeds := kafkaAddresses(servers[:2])
			cl := newClientSeeds(t, seeds)
			admin := kadm.NewClient(cl)
			const topic = "rebuilt"
			const segment, localRetention = 1 << 20, 2 << 20
			createReplicated(ctx, t, cl, topic, map[string]*string{
				"min.insync.replicas":   kadm.StringPtr("2"),
				"remote.storage.enable": kadm.StringPtr("true"),
				"segment.bytes":         kadm.StringPtr(strconv.Itoa(segment)),
				"segment.ms":            kadm.StringPtr("2000"),
				"local.retention.bytes": kadm.StringPtr(strconv.Itoa(localRetention)),
			}, 4, 5, 3)
			producer := newClientSeeds(t, seeds, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(64<<10),
				kgo.ProducerBatchCompression(kgo.NoCompression()))
			value := make([]byte, 1024)
			records := historyBytes(t) / len(value)
			for range records {
				producer.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Error(err)
					}
				})
			}
			if err := producer.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			// Tiered until the leader's local log holds about its retention:
			// 1 KiB records, a few segments' worth.
			maxLocal := int64(4 * segment / len(value))
			for deadline := time.Now().Add(5 * time.Minute); int64(records)-listOffset(t, cl, topic, -4) > maxLocal; time.Sleep(100 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the leader's local log start is still %d of %d after 5 minutes", listOffset(t, cl, topic, -4), records)
				}
			}
			localStart := listOffset(t, cl, topic, -4)

			const rebuiltID = 5
			rebuilt := servers[rebuiltID-1]
			rebuilt.kill()
			if err := os.RemoveAll(filepath.Join(rebuilt.dataDir, "partitions")); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			rebuilt.restart()
			ready := time.Since(start)
			waitPartitions(ctx, t, admin, topic, "the rebuilt replica back in the ISR", func(p kadm.PartitionDetail) bool {
				return slices.Contains(p.ISR, rebuiltID)
			})
			joined := time.Since(start)
			if got := logStartOn(t, rebuilt, topic); got == 0 {
				t.Fatal("the rebuilt replica copied the log from offset 0, not from the leader's local log start")
			}

			b.ReportMetric(float64(records*len(value))/(1<<20), "history-MiB")
			b.ReportMetric(float64(int64(records)-localStart)*float64(len(value))/(1<<20), "local-MiB")
			b.ReportMetric(ready.Seconds(), "ready-s")
			b.ReportMetric(joined.Seconds(), "join-s")
		})
	}
}

// logStartOn is partition 0 of topic's log start offset on s, from
// /metrics.
func logStartOn(t *testing.T, s *server, topic string) int64 {
	t.Helper()
	return int64(scrapeMetrics(t, s).value(t, "strata_ingest_log_start_offset", "topic", topic, "partition", "0"))
}
