package replica

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Partition directories. Each partition this broker holds a replica of lives in
// <data>/<topic>-<partition>/, holding the hot log's files and a
// partition.metadata file naming the topic id the directory belongs to, in
// Kafka's format:
//
//	version: 0
//	topic_id: <base64url topic id, no padding>
//
// A topic deleted and created again under the same name gets a new id, so a
// directory left over from the old topic (for instance, the broker was down
// when the deletion was applied) is recognised by its id and removed before
// the new partition is created.
//
// Deleting renames the directory to <topic>-<partition>.<hex id>-delete
// first, so a new topic of the same name can be created at once, then
// removes it.

const (
	partitionMetadataFile = "partition.metadata"
	deletedDirSuffix      = "-delete"
)

// DirName is the directory name of partition p of topic, under the data
// directory.
func DirName(topic string, p int32) string {
	return topic + "-" + strconv.FormatInt(int64(p), 10)
}

// parsePartitionDirName splits a partition directory name; topic names may
// contain '-', so the partition is what follows the last one.
func parsePartitionDirName(name string) (topic string, p int32, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != name[i+1:] {
		return "", 0, false
	}
	return name[:i], int32(n), true
}

func formatPartitionMetadata(id uuid.UUID) []byte {
	return fmt.Appendf(nil, "version: 0\ntopic_id: %s\n", encodeTopicID(id))
}

// encodeTopicID writes a topic id the way Kafka prints one: URL-safe base64
// without padding.
func encodeTopicID(id uuid.UUID) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// decodeTopicID is encodeTopicID's inverse.
func decodeTopicID(s string) (uuid.UUID, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return uuid.Nil, false
	}
	id, err := uuid.FromBytes(b)
	return id, err == nil
}

// readPartitionTopicID returns the topic id a partition directory belongs
// to; ok is false when the directory or its metadata file does not exist.
func readPartitionTopicID(dir string) (id string, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(dir, partitionMetadataFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if len(data) == 0 {
		// Created and never written: a crash inside preparePartitionDir
		// of a release that wrote the file in place. Nothing was written
		// in the directory after it, so it is as good as missing.
		return "", false, nil
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if v, found := bytes.CutPrefix(line, []byte("topic_id: ")); found {
			return string(bytes.TrimSpace(v)), true, nil
		}
	}
	return "", false, fmt.Errorf("%s: no topic_id line", filepath.Join(dir, partitionMetadataFile))
}

// preparePartitionDir makes dir the directory of a partition of topic id:
// a directory of another topic incarnation is removed first. It writes the
// metadata file (fsynced, with the directory) when it is missing.
func preparePartitionDir(dir string, id uuid.UUID) error {
	existing, ok, err := readPartitionTopicID(dir)
	if err != nil {
		return err
	}
	want := encodeTopicID(id)
	if ok && existing == want {
		return nil
	}
	if ok {
		if err := removePartitionDir(dir, existing); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeFileSynced(filepath.Join(dir, partitionMetadataFile), formatPartitionMetadata(id))
}

// removePartitionDir renames dir aside, then removes it.
func removePartitionDir(dir, topicID string) error {
	doomed := dir + "." + topicID + deletedDirSuffix
	if err := os.Rename(dir, doomed); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.RemoveAll(doomed)
}

// temporarySuffix names a file written whole before its rename; the hot
// log's Open removes leftovers with it from the partition's directory.
const temporarySuffix = ".tmp"

// writeFileSynced writes a small file whole or not at all: under a
// temporary name (a leftover one is removed when the partition's log
// opens), fsynced, renamed, and the directory fsynced. Written in place, a
// kill -9 between the create and the write left partition.metadata empty,
// and the next start refused the partition.
func writeFileSynced(path string, data []byte) error {
	tmp := path + temporarySuffix
	if err := writeFileData(tmp, data); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// writeFileData writes a small file and fsyncs it, not its directory.
func writeFileData(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return err
}

// syncDir fsyncs a directory, making the entries changed in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if closeErr := d.Close(); err == nil {
		err = closeErr
	}
	return err
}

// Purge markers. A deleted topic's partition whose bucket objects are
// still to be deleted has an empty file <topic>-<partition>.<id>.purge in
// the data directory, created before the purge starts and removed once it
// is done. It is not fsynced: a topic of thousands of partitions would
// hold the reconcile for thousands of fsyncs, and what a crash just after
// the deletion loses is at worst a marker whose purge then never runs (as
// before markers). Topic names may hold '.', a topic id (base64url) does
// not.
const purgeMarkerSuffix = ".purge"

func purgeMarkerName(topic string, index int32, id uuid.UUID) string {
	return DirName(topic, index) + "." + encodeTopicID(id) + purgeMarkerSuffix
}

// parsePurgeMarker is purgeMarkerName's inverse; ok is false for any
// other name.
func parsePurgeMarker(name string) (topic string, index int32, id uuid.UUID, ok bool) {
	rest, found := strings.CutSuffix(name, purgeMarkerSuffix)
	dot := strings.LastIndexByte(rest, '.')
	if !found || dot < 0 {
		return "", 0, uuid.Nil, false
	}
	if id, ok = decodeTopicID(rest[dot+1:]); !ok {
		return "", 0, uuid.Nil, false
	}
	topic, index, ok = parsePartitionDirName(rest[:dot])
	return topic, index, id, ok
}

// writePurgeMarker creates the empty marker file at path.
func writePurgeMarker(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}
