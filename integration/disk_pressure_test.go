package integration

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/internal/smallfs"
	"github.com/stratalog/strata/objstore/objstoretest"
)

// TestDiskFullRefusesWritesAndRecovers runs a broker whose hot disk is a
// 32 MiB tmpfs, with its bucket on versitygw behind a fault proxy that
// refuses every upload. Produce fills the disk until it is refused with
// KAFKA_STORAGE_ERROR; the broker stays up, every acknowledged record
// still reads back, and no refused record is ever written. Once uploads
// go through, offload deletes uploaded segments from the hot disk,
// produce is accepted again without a restart, and after a kill -9 and a
// restart on the same small disk every acknowledged record is there.
func TestDiskFullRefusesWritesAndRecovers(t *testing.T) {
	t.Parallel()
	dataDir := smallfs.Tmpfs(t, "32m")

	gw := startVersityGW(t)
	proxy := startFaultProxy(t, gw)
	uploads := proxy.Add(objstoretest.Method("PUT"), objstoretest.Status(503), 0)
	multipart := proxy.Add(objstoretest.Method("POST"), objstoretest.Status(503), 0)

	s := &server{t: t, dataDir: dataDir, kafka: freePort(t), admin: freePort(t), meta: freePort(t), env: bucketEnv(gw),
		extra: []string{"--bucket", objstoretest.S3URL(proxy.URL(), testBucket, "cluster"), "--remote.log.manager.task.interval.ms", "200"}}
	s.start()
	t.Cleanup(s.stop)

	const topic = "full"
	createTopic(t, s, topic, 1, map[string]*string{
		"segment.bytes":         kadmString(strconv.Itoa(1 << 20)),
		"local.retention.bytes": kadmString(strconv.Itoa(2 << 20)),
	})
	// No retries: a refused batch must come back to the test as refused.
	producer := newClient(t, s, kgo.DisableIdempotentWrite(), kgo.RecordRetries(0), kgo.ProducerLinger(0))
	rng := rand.New(rand.NewPCG(3, 4))
	var acked []testRecord
	produceUntilRefused := func() error {
		for range 4096 { // 128 MiB: four times the disk
			value := make([]byte, 32<<10)
			for i := range value {
				value[i] = byte(rng.Uint32())
			}
			r := &kgo.Record{Key: []byte(strconv.Itoa(len(acked))), Value: value}
			res := produce(producer, topic, []*kgo.Record{r})
			if err := res.FirstErr(); err != nil {
				return err
			}
			acked = append(acked, acknowledged(t, res)...)
		}
		return nil
	}
	err := produceUntilRefused()
	if !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("producing 128 MiB to a 32 MiB disk with uploads refused: got %v after %d records, want KAFKA_STORAGE_ERROR:\n%s", err, len(acked), s.log)
	}
	if uploads.Hits()+multipart.Hits() == 0 {
		t.Fatalf("no upload reached the fault proxy:\n%s", s.log)
	}
	t.Logf("disk full after %d acknowledged records (%d MiB): %v", len(acked), len(acked)*32>>10, err)
	select {
	case <-s.exited:
		t.Fatalf("the broker exited on a full disk:\n%s", s.log)
	default:
	}
	checkSameRecords(t, acked, consumeAll(t, s, topic, len(acked)))

	// Let uploads through: offload frees the hot disk and produce is
	// accepted again, with no restart. Poll: recovery has no event a
	// client can wait on. A write may be taken before offload frees
	// anything, where the disk sits just under its high-water mark and a
	// few pages come back; the polling goes on until the hot log's start
	// has moved, offload's deletes, and a write is taken.
	proxy.Clear()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	admin := newClient(t, s)
	for offloaded := false; ; {
		value := make([]byte, 32<<10)
		r := &kgo.Record{Key: []byte(strconv.Itoa(len(acked))), Value: value}
		res := produce(producer, topic, []*kgo.Record{r})
		err := res.FirstErr()
		if err == nil {
			acked = append(acked, acknowledged(t, res)...)
			if offloaded {
				break
			}
		}
		if err != nil && !errors.Is(err, kerr.KafkaStorageError) {
			t.Fatalf("produce while the disk drains: %v, want success or KAFKA_STORAGE_ERROR", err)
		}
		offloaded = listOffset(t, admin, topic, -4) > 0
		if time.Now().After(deadline) {
			t.Fatalf("a minute after uploads were let through: offloaded %v, produce %v:\n%s", offloaded, err, s.log)
		}
		<-tick.C
	}
	for range 64 { // 2 MiB more: the log keeps taking writes
		r := &kgo.Record{Key: []byte(strconv.Itoa(len(acked))), Value: make([]byte, 32<<10)}
		acked = append(acked, produceAll(t, producer, topic, []*kgo.Record{r})...)
	}
	checkSameRecords(t, acked, consumeAll(t, s, topic, len(acked)))

	s.kill()
	s.restart()
	checkSameRecords(t, acked, consumeAll(t, s, topic, len(acked)))
}
