package meta

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// CommandType identifies a command in the Raft log. The values are a
// persistent format: never renumber or reuse one.
type CommandType uint8

const (
	cmdInvalid              CommandType = 0 // catches zeroed data
	cmdBatch                CommandType = 1
	cmdInitCluster          CommandType = 2
	cmdRegisterBroker       CommandType = 3
	cmdFenceBroker          CommandType = 4
	cmdCreateTopic          CommandType = 5
	cmdDeleteTopic          CommandType = 6
	cmdAlterTopicConfigs    CommandType = 7
	cmdAlterPartition       CommandType = 8
	cmdBeginSegmentCopy     CommandType = 9
	cmdCommitSegmentCopy    CommandType = 10
	cmdBeginSegmentDelete   CommandType = 11
	cmdFinishSegmentDelete  CommandType = 12
	cmdCommitOffsets        CommandType = 13
	cmdDeleteOffsets        CommandType = 14
	cmdCreatePartitions     CommandType = 15
	cmdExpireOffsets        CommandType = 16
	cmdReassignPartition    CommandType = 17
	cmdElectLeader          CommandType = 18
	cmdDrainBroker          CommandType = 19
	cmdAlterBrokerConfigs   CommandType = 20
	cmdAlterClientQuota     CommandType = 21
	cmdUnregisterBroker     CommandType = 22
	cmdAlterScramCredential CommandType = 23
	cmdCreateACLs           CommandType = 24
	cmdDeleteACLs           CommandType = 25
	cmdBeginSegmentReplace  CommandType = 26
	cmdCommitSegmentReplace CommandType = 27
	cmdSetRemoteCleaned     CommandType = 28
	cmdRegisterSchema       CommandType = 29
	cmdDeleteSchemaVersion  CommandType = 30
	cmdSetRegistryConfig    CommandType = 31
	cmdMoveRemoteLogStart   CommandType = 32
)

func (t CommandType) String() string {
	if spec := commandSpecs[t]; spec != nil {
		return spec.name
	}
	if t == cmdBatch {
		return "Batch"
	}
	return fmt.Sprintf("CommandType(%d)", uint8(t))
}

// Command is a change to the metadata, proposed with Node.Propose. The
// command types are the exported structs of this package that implement it
// (CreateTopic, CommitOffsets, ...); the set is closed because the state
// machine must know how to apply each one.
type Command interface {
	commandType() CommandType
}

// Envelope: every command in the log is
//
//	+------+---------+-------+------------------------------+
//	| type | version | flags | body                         |
//	|  u8  |   u8    |  u8   | canonical JSON of the struct |
//	+------+---------+-------+------------------------------+
//
// A batch (type 1, version 1) carries other envelopes instead of JSON:
//
//	body = uvarint count, then count times (uvarint length, envelope)
//
// Batches do not nest. Flag bit 0 marks a command optional: a node that does
// not know its type or version skips it instead of stopping. The other flag
// bits are reserved; a command using one is unknown to this binary.
const (
	envelopeHeader   = 3
	flagOptional     = 1 << 0
	batchVersion     = 1
	maxBatchCommands = 1 << 16
)

// commandSpec is one entry of the command registry.
type commandSpec struct {
	name    string
	version uint8
	decode  func(body []byte) (Command, error)
	apply   func(cmd Command, tx *txn) (int64, error)
}

// commandSpecs is the registry, filled by registerCommand from the init
// functions of the files that define the commands.
var commandSpecs [256]*commandSpec

// registerCommand adds a command type to the registry: its wire type, name,
// the version this binary writes and reads, and the function that applies
// it. apply checks every precondition and returns a sentinel error before it
// changes anything through tx (and tx is discarded on error anyway); its
// int64 result is Result.Epoch. apply must be deterministic: no clock, no
// randomness, no map iteration.
func registerCommand[T any, P interface {
	*T
	Command
}](typ CommandType, name string, version uint8, apply func(P, *txn) (int64, error)) {
	if typ == cmdInvalid || typ == cmdBatch || commandSpecs[typ] != nil {
		panic(fmt.Sprintf("meta: command type %d registered twice or reserved", typ))
	}
	if version == 0 {
		panic(fmt.Sprintf("meta: command %s has version %d", name, version))
	}
	commandSpecs[typ] = &commandSpec{
		name:    name,
		version: version,
		decode: func(body []byte) (Command, error) {
			var cmd T
			if err := decodeJSON(body, &cmd); err != nil {
				return nil, err
			}
			return P(&cmd), nil
		},
		apply: func(cmd Command, tx *txn) (int64, error) {
			return apply(cmd.(P), tx)
		},
	}
}

// encodeCommand encodes cmd in its envelope.
func encodeCommand(cmd Command) ([]byte, error) {
	typ := cmd.commandType()
	spec := commandSpecs[typ]
	if spec == nil {
		return nil, fmt.Errorf("%w: type %d not registered", ErrUnknownCommand, typ)
	}
	body, err := json.Marshal(cmd)
	if err != nil {
		return nil, fmt.Errorf("%w: encoding %s: %v", ErrInvalidCommand, spec.name, err)
	}
	out := make([]byte, envelopeHeader, envelopeHeader+len(body))
	out[0], out[1], out[2] = byte(typ), spec.version, 0
	return append(out, body...), nil
}

// envelope is a parsed envelope header with its body.
type envelope struct {
	typ     CommandType
	version uint8
	flags   uint8
	body    []byte
}

func (e envelope) optional() bool { return e.flags&flagOptional != 0 }

func parseEnvelope(data []byte) (envelope, error) {
	if len(data) < envelopeHeader {
		return envelope{}, fmt.Errorf("%w: %d bytes, shorter than the envelope header", ErrInvalidCommand, len(data))
	}
	return envelope{typ: CommandType(data[0]), version: data[1], flags: data[2], body: data[envelopeHeader:]}, nil
}

// decodeCommand decodes one (non-batch) envelope. A type or version this
// binary does not know, or a reserved flag, gives ErrUnknownCommand; a body
// that does not decode gives ErrInvalidCommand.
func decodeCommand(data []byte) (Command, error) {
	env, err := parseEnvelope(data)
	if err != nil {
		return nil, err
	}
	spec := commandSpecs[env.typ]
	if env.typ == cmdBatch {
		return nil, fmt.Errorf("%w: nested batch", ErrInvalidCommand)
	}
	if spec == nil || env.version == 0 || env.version > spec.version || env.flags&^flagOptional != 0 {
		return nil, fmt.Errorf("%w: type %d version %d flags %#x", ErrUnknownCommand, env.typ, env.version, env.flags)
	}
	cmd, err := spec.decode(env.body)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidCommand, spec.name, err)
	}
	return cmd, nil
}

// Check reports whether cmd would apply to s: it returns the error Propose
// would return if cmd were the next command applied after s (a precondition
// sentinel, or ErrInvalidCommand for one that does not encode), or nil. It
// changes nothing. Validate-only requests use it to get the state machine's
// own answer without a proposal.
func (s *State) Check(cmd Command) error {
	data, err := encodeCommand(cmd)
	if err != nil {
		return err
	}
	decoded, err := decodeCommand(data)
	if err != nil {
		return err
	}
	tx := txn{st: *s, index: s.index + 1}
	_, err = commandSpecs[decoded.commandType()].apply(decoded, &tx)
	return err
}

// decodeEntry splits a log entry into its command envelopes: the one
// command, or each command of a batch. It checks the framing only.
func decodeEntry(data []byte) ([][]byte, error) {
	env, err := parseEnvelope(data)
	if err != nil {
		return nil, err
	}
	if env.typ != cmdBatch {
		return [][]byte{data}, nil
	}
	if env.version != batchVersion || env.flags != 0 {
		return nil, fmt.Errorf("%w: batch version %d flags %#x", ErrUnknownCommand, env.version, env.flags)
	}
	return decodeBatchBody(env.body)
}

// encodeBatch encodes commands as one log entry: a single command as
// itself, several as a batch.
func encodeBatch(cmds [][]byte) []byte {
	if len(cmds) == 1 {
		return cmds[0]
	}
	return appendBatchBody([]byte{byte(cmdBatch), batchVersion, 0}, cmds)
}

// appendBatchBody appends the count-and-length-prefixed commands; the
// forwarding RPC uses the same layout.
func appendBatchBody(out []byte, cmds [][]byte) []byte {
	out = binary.AppendUvarint(out, uint64(len(cmds)))
	for _, c := range cmds {
		out = binary.AppendUvarint(out, uint64(len(c)))
		out = append(out, c...)
	}
	return out
}

func decodeBatchBody(body []byte) ([][]byte, error) {
	count, n := binary.Uvarint(body)
	if n <= 0 || count == 0 || count > maxBatchCommands {
		return nil, fmt.Errorf("%w: bad batch count", ErrInvalidCommand)
	}
	body = body[n:]
	cmds := make([][]byte, 0, int(min(count, uint64(len(body)))))
	for i := uint64(0); i < count; i++ {
		size, n := binary.Uvarint(body)
		if n <= 0 || size > uint64(len(body)-n) {
			return nil, fmt.Errorf("%w: batch command %d truncated", ErrInvalidCommand, i)
		}
		cmds = append(cmds, body[n:n+int(size)])
		body = body[n+int(size):]
	}
	if len(body) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the batch", ErrInvalidCommand, len(body))
	}
	return cmds, nil
}

// decodeJSON decodes exactly one JSON value into v, refusing fields v does
// not have and anything after the value.
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON value")
	}
	return nil
}
