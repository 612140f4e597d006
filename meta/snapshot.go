package meta

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	"github.com/google/uuid"
	iradix "github.com/hashicorp/go-immutable-radix/v2"
)

// Snapshot format, version 1. Raft's file snapshot store wraps it in its own
// directory with meta.json (index, term, configuration, size, CRC-64).
//
//	+------------------+-------------+-----------------------+---------+
//	| magic "STRMSNAP" | version u16 | record ...            | trailer |
//	+------------------+-------------+-----------------------+---------+
//	record  = kind u8 | uvarint length | body: JSON of the record
//	trailer = 0xFF | record count u64 | CRC-32C (Castagnoli) u32
//
// Integers are big-endian. The CRC covers every byte before it. Records come
// in kind order — one header, then brokers, topics, partitions, manifests,
// offsets — and within a kind in strictly increasing key order (the State's
// tree order). The same State therefore always gives the same bytes, and a
// reader can check order, uniqueness and references while it streams.
const (
	snapshotMagic   = "STRMSNAP"
	snapshotVersion = 1
	// maxSnapshotRecord bounds one record's body, so a corrupt length
	// cannot make the reader allocate without limit.
	maxSnapshotRecord = 64 << 20
)

// Snapshot record kinds.
const (
	recordHeader    byte = 1
	recordBroker    byte = 2
	recordTopic     byte = 3
	recordPartition byte = 4
	recordManifest  byte = 5
	recordOffset    byte = 6
	recordBrokerCfg byte = 7
	recordQuota     byte = 8
	recordScram     byte = 9
	recordACL       byte = 10
	recordSchema    byte = 11
	recordSubject   byte = 12
	recordRegistry  byte = 13
	recordTrailer   byte = 0xFF
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// snapshotHeader is the header record.
type snapshotHeader struct {
	Index           uint64 `json:"index"`
	ClusterID       string `json:"cluster_id"`
	NextBrokerEpoch int64  `json:"next_broker_epoch"`
}

// writeSnapshot writes st in the snapshot format.
func writeSnapshot(w io.Writer, st *State) error {
	sw := &snapshotWriter{w: w, crc: crc32.New(castagnoli)}
	sw.write([]byte(snapshotMagic))
	sw.write(binary.BigEndian.AppendUint16(nil, snapshotVersion))
	sw.record(recordHeader, snapshotHeader{Index: st.index, ClusterID: st.clusterID, NextBrokerEpoch: st.nextBrokerEpoch})
	writeTree(sw, recordBroker, st.brokers)
	writeTree(sw, recordTopic, st.topics)
	writeTree(sw, recordPartition, st.partitions)
	writeTree(sw, recordManifest, st.manifests)
	writeTree(sw, recordOffset, st.offsets)
	writeTree(sw, recordBrokerCfg, st.brokerConfigs)
	writeTree(sw, recordQuota, st.clientQuotas)
	writeTree(sw, recordScram, st.credentials)
	writeTree(sw, recordACL, st.acls)
	writeTree(sw, recordSchema, st.schemas)
	writeTree(sw, recordSubject, st.subjects)
	if st.registry != (RegistryConfig{}) {
		sw.record(recordRegistry, st.registry)
	}
	sw.write(binary.BigEndian.AppendUint64([]byte{recordTrailer}, sw.count))
	if sw.err != nil {
		return sw.err
	}
	_, err := w.Write(binary.BigEndian.AppendUint32(nil, sw.crc.Sum32()))
	return err
}

func writeTree[T any](sw *snapshotWriter, kind byte, tree *iradix.Tree[T]) {
	tree.Root().Walk(func(_ []byte, v T) bool {
		sw.record(kind, v)
		return sw.err != nil
	})
}

// snapshotWriter writes through the CRC and keeps the first error.
type snapshotWriter struct {
	w     io.Writer
	crc   hash.Hash32
	count uint64
	err   error
}

func (sw *snapshotWriter) write(p []byte) {
	if sw.err != nil {
		return
	}
	if _, err := sw.w.Write(p); err != nil {
		sw.err = err
		return
	}
	sw.crc.Write(p)
}

func (sw *snapshotWriter) record(kind byte, v any) {
	body, err := json.Marshal(v)
	if err != nil && sw.err == nil {
		sw.err = err
	}
	sw.write(binary.AppendUvarint([]byte{kind}, uint64(len(body))))
	sw.write(body)
	sw.count++
}

// readSnapshot reads and checks a snapshot. Every error wraps
// ErrCorruptSnapshot.
func readSnapshot(r *bufio.Reader) (*State, error) {
	sr := &snapshotReader{r: r, crc: crc32.New(castagnoli)}
	st, err := sr.read()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptSnapshot, err)
	}
	return st, nil
}

// snapshotReader reads through the CRC.
type snapshotReader struct {
	r   *bufio.Reader
	crc hash.Hash32
}

// readFull reads n bytes. The buffer grows with the bytes that actually
// arrive, so a corrupt length in a short snapshot allocates little.
func (sr *snapshotReader) readFull(n int) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, sr.r, int64(n)); err != nil {
		return nil, truncated(err)
	}
	sr.crc.Write(buf.Bytes())
	return buf.Bytes(), nil
}

func (sr *snapshotReader) readByte() (byte, error) {
	b, err := sr.r.ReadByte()
	if err != nil {
		return 0, truncated(err)
	}
	sr.crc.Write([]byte{b})
	return b, nil
}

func (sr *snapshotReader) readUvarint() (uint64, error) {
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		b, err := sr.readByte()
		if err != nil {
			return 0, err
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("record length overflows")
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("truncated")
	}
	return err
}

// snapshotBuilder collects records into trees and checks them.
type snapshotBuilder struct {
	header        snapshotHeader
	brokers       *iradix.Txn[*Broker]
	topics        *iradix.Txn[*Topic]
	topicIDs      *iradix.Txn[string]
	partitions    *iradix.Txn[*Partition]
	manifests     *iradix.Txn[*Manifest]
	offsets       *iradix.Txn[*CommittedOffset]
	brokerConfigs *iradix.Txn[*BrokerConfigs]
	clientQuotas  *iradix.Txn[*ClientQuota]
	credentials   *iradix.Txn[*UserCredential]
	acls          *iradix.Txn[*ACLResource]
	schemas       *iradix.Txn[*RegisteredSchema]
	subjects      *iradix.Txn[*Subject]
	registry      RegistryConfig
	partitionsPer map[string]int32
}

func (sr *snapshotReader) read() (*State, error) {
	head, err := sr.readFull(len(snapshotMagic) + 2)
	if err != nil {
		return nil, err
	}
	if string(head[:len(snapshotMagic)]) != snapshotMagic {
		return nil, errors.New("not a strata metadata snapshot (bad magic)")
	}
	if v := binary.BigEndian.Uint16(head[len(snapshotMagic):]); v != snapshotVersion {
		return nil, fmt.Errorf("snapshot format version %d, this binary reads %d", v, snapshotVersion)
	}
	empty := newState()
	b := &snapshotBuilder{
		brokers: empty.brokers.Txn(), topics: empty.topics.Txn(), topicIDs: empty.topicIDs.Txn(),
		partitions: empty.partitions.Txn(), manifests: empty.manifests.Txn(), offsets: empty.offsets.Txn(),
		brokerConfigs: empty.brokerConfigs.Txn(), clientQuotas: empty.clientQuotas.Txn(),
		credentials: empty.credentials.Txn(), acls: empty.acls.Txn(),
		schemas: empty.schemas.Txn(), subjects: empty.subjects.Txn(), partitionsPer: make(map[string]int32),
	}
	var (
		count    uint64
		lastKind byte
		lastKey  []byte
	)
	for {
		kind, err := sr.readByte()
		if err != nil {
			return nil, err
		}
		if kind == recordTrailer {
			break
		}
		if kind < recordHeader || kind > recordRegistry {
			return nil, fmt.Errorf("record %d: unknown kind %d", count, kind)
		}
		if kind < lastKind || (kind == recordHeader) != (count == 0) {
			return nil, fmt.Errorf("record %d: kind %d out of order", count, kind)
		}
		size, err := sr.readUvarint()
		if err != nil {
			return nil, err
		}
		if size > maxSnapshotRecord {
			return nil, fmt.Errorf("record %d: %d bytes, over the %d limit", count, size, maxSnapshotRecord)
		}
		body, err := sr.readFull(int(size))
		if err != nil {
			return nil, err
		}
		key, err := b.add(kind, body)
		if err != nil {
			return nil, fmt.Errorf("record %d (kind %d): %v", count, kind, err)
		}
		if kind == lastKind && bytes.Compare(key, lastKey) <= 0 {
			return nil, fmt.Errorf("record %d (kind %d): key out of order or repeated", count, kind)
		}
		lastKind, lastKey = kind, key
		count++
	}
	tail, err := sr.readFull(8)
	if err != nil {
		return nil, err
	}
	if n := binary.BigEndian.Uint64(tail); n != count {
		return nil, fmt.Errorf("trailer counts %d records, read %d", n, count)
	}
	want := sr.crc.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(sr.r, sum[:]); err != nil {
		return nil, truncated(err)
	}
	if got := binary.BigEndian.Uint32(sum[:]); got != want {
		return nil, fmt.Errorf("CRC-32C %08x, computed %08x", got, want)
	}
	if _, err := sr.r.ReadByte(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the trailer")
	}
	if count == 0 {
		return nil, errors.New("no header record")
	}
	return b.finish()
}

// add decodes and checks one record and returns its tree key.
func (b *snapshotBuilder) add(kind byte, body []byte) ([]byte, error) {
	switch kind {
	case recordHeader:
		if err := decodeJSON(body, &b.header); err != nil {
			return nil, err
		}
		if b.header.NextBrokerEpoch < 1 {
			return nil, fmt.Errorf("next broker epoch %d", b.header.NextBrokerEpoch)
		}
		return nil, nil
	case recordBroker:
		var r Broker
		if err := decodeJSON(body, &r); err != nil {
			return nil, err
		}
		if r.ID < 0 || r.Epoch < 1 || r.Epoch >= b.header.NextBrokerEpoch {
			return nil, fmt.Errorf("broker %d at epoch %d", r.ID, r.Epoch)
		}
		key := brokerKey(r.ID)
		b.brokers.Insert(key, &r)
		return key, nil
	case recordTopic:
		var r Topic
		if err := decodeJSON(body, &r); err != nil {
			return nil, err
		}
		if err := validTopicName(r.Name); err != nil {
			return nil, err
		}
		if r.ID == uuid.Nil || r.Partitions < 1 {
			return nil, fmt.Errorf("topic %q has id %s and %d partitions", r.Name, r.ID, r.Partitions)
		}
		if _, dup := b.topicIDs.Insert(r.ID[:], r.Name); dup {
			return nil, fmt.Errorf("topic id %s used twice", r.ID)
		}
		if _, err := ValidateTopicConfigs(r.Configs); err != nil {
			return nil, err
		}
		key := topicKey(r.Name)
		b.topics.Insert(key, &r)
		return key, nil
	case recordPartition:
		var r Partition
		if err := decodeJSON(body, &r); err != nil {
			return nil, err
		}
		t, ok := b.topics.Get(topicKey(r.Topic))
		if !ok || r.Partition < 0 || r.Partition >= t.Partitions {
			return nil, fmt.Errorf("partition %s-%d has no topic", r.Topic, r.Partition)
		}
		if len(r.Replicas) == 0 || len(r.ISR) == 0 {
			return nil, fmt.Errorf("partition %s-%d has no replicas or ISR", r.Topic, r.Partition)
		}
		b.partitionsPer[r.Topic]++
		key := partitionKey(r.Topic, r.Partition)
		b.partitions.Insert(key, &r)
		return key, nil
	case recordManifest:
		var r Manifest
		if err := decodeJSON(body, &r); err != nil {
			return nil, err
		}
		key := partitionKey(r.Topic, r.Partition)
		if _, ok := b.partitions.Get(key); !ok {
			return nil, fmt.Errorf("manifest of %s-%d has no partition", r.Topic, r.Partition)
		}
		if err := checkManifest(&r); err != nil {
			return nil, err
		}
		b.manifests.Insert(key, &r)
		return key, nil
	case recordOffset:
		var r CommittedOffset
		if err := decodeJSON(body, &r); err != nil {
			return nil, err
		}
		if _, ok := b.partitions.Get(partitionKey(r.Topic, r.Partition)); !ok || r.Group == "" {
			return nil, fmt.Errorf("offset of group %q on %s-%d has no partition", r.Group, r.Topic, r.Partition)
		}
		key := offsetKey(r.Group, r.Topic, r.Partition)
		b.offsets.Insert(key, &r)
		return key, nil
	case recordBrokerCfg:
		var r BrokerConfigs
		if err := decodeJSON(body, &r); err != nil {
			return nil, err
		}
		if err := checkBrokerResource(r.Broker); err != nil {
			return nil, err
		}
		if len(r.Configs) == 0 {
			return nil, fmt.Errorf("broker %q has an empty config record", r.Broker)
		}
		if _, err := ValidateBrokerConfigs(r.Configs); err != nil {
			return nil, err
		}
		key := []byte(r.Broker)
		b.brokerConfigs.Insert(key, &r)
		return key, nil
	case recordQuota:
		var r ClientQuota
		if err := decodeJSON(body, &r); err != nil {
			return nil, err
		}
		if err := r.Entity.check(); err != nil {
			return nil, err
		}
		if len(r.Values) == 0 {
			return nil, fmt.Errorf("client quota of %s has no values", r.Entity)
		}
		for _, key := range sortedKeys(r.Values) {
			if err := checkQuotaValue(key, r.Values[key]); err != nil {
				return nil, err
			}
		}
		key := r.Entity.key()
		b.clientQuotas.Insert(key, &r)
		return key, nil
	case recordScram:
		var r UserCredential
		if err := decodeJSON(body, &r); err != nil {
			return nil, err
		}
		if err := r.check(); err != nil {
			return nil, err
		}
		key := credentialKey(r.User, r.Mechanism)
		b.credentials.Insert(key, &r)
		return key, nil
	case recordACL:
		var r ACLResource
		if err := decodeJSON(body, &r); err != nil {
			return nil, err
		}
		if err := r.check(); err != nil {
			return nil, err
		}
		key := aclKey(r.Type, r.Pattern, r.Name)
		b.acls.Insert(key, &r)
		return key, nil
	case recordSchema:
		var r RegisteredSchema
		if err := decodeJSON(body, &r); err != nil {
			return nil, err
		}
		if r.ID <= 0 || r.Type == "" || r.Text == "" || r.Fingerprint == "" {
			return nil, fmt.Errorf("schema %d is incomplete", r.ID)
		}
		key := schemaKey(r.ID)
		b.schemas.Insert(key, &r)
		return key, nil
	case recordSubject:
		var r Subject
		if err := decodeJSON(body, &r); err != nil {
			return nil, err
		}
		for i, v := range r.Versions {
			if _, ok := b.schemas.Get(schemaKey(v.SchemaID)); !ok || v.Version <= 0 || (i > 0 && v.Version <= r.Versions[i-1].Version) {
				return nil, fmt.Errorf("subject %q: version %d (schema %d) out of order or unknown", r.Name, v.Version, v.SchemaID)
			}
		}
		key := subjectKey(r.Name)
		b.subjects.Insert(key, &r)
		return key, nil
	case recordRegistry:
		if err := decodeJSON(body, &b.registry); err != nil {
			return nil, err
		}
		return []byte("registry"), nil
	}
	return nil, fmt.Errorf("unknown kind %d", kind)
}

// checkManifest checks a restored manifest's invariants. Segments are sorted
// by base offset, so committed ones overlap exactly when one starts at or
// before the highest end offset of those before it.
func checkManifest(m *Manifest) error {
	highestEnd := int64(-1)
	for i, s := range m.Segments {
		if err := checkNewSegment(s); err != nil {
			return err
		}
		if i > 0 && compareSegments(m.Segments[i-1], s) >= 0 {
			return fmt.Errorf("manifest of %s-%d: segments out of order", m.Topic, m.Partition)
		}
		if s.State != SegmentCommitted {
			continue
		}
		if s.BaseOffset <= highestEnd {
			return fmt.Errorf("manifest of %s-%d: committed segments overlap at %s", m.Topic, m.Partition, s.ID)
		}
		highestEnd = s.EndOffset
	}
	return nil
}

func (b *snapshotBuilder) finish() (*State, error) {
	topics := b.topics.Commit()
	var err error
	topics.Root().Walk(func(_ []byte, t *Topic) bool {
		if n := b.partitionsPer[t.Name]; n != t.Partitions {
			err = fmt.Errorf("topic %q has %d partitions, %d recorded", t.Name, t.Partitions, n)
		}
		return err != nil
	})
	if err != nil {
		return nil, err
	}
	st := newState()
	st.index = b.header.Index
	st.clusterID = b.header.ClusterID
	st.nextBrokerEpoch = b.header.NextBrokerEpoch
	st.brokers = b.brokers.Commit()
	st.topics = topics
	st.topicIDs = b.topicIDs.Commit()
	st.partitions = b.partitions.Commit()
	st.manifests = b.manifests.Commit()
	st.offsets = b.offsets.Commit()
	st.brokerConfigs = b.brokerConfigs.Commit()
	st.clientQuotas = b.clientQuotas.Commit()
	st.credentials = b.credentials.Commit()
	st.acls = b.acls.Commit()
	var highestID int32
	b.schemas.Root().Walk(func(_ []byte, r *RegisteredSchema) bool {
		highestID = max(highestID, r.ID)
		return false
	})
	if b.registry.LastSchemaID < highestID {
		return nil, fmt.Errorf("the registry's last schema id %d is below schema %d", b.registry.LastSchemaID, highestID)
	}
	st.schemas = b.schemas.Commit()
	st.subjects = b.subjects.Commit()
	st.registry = b.registry
	return st, nil
}
