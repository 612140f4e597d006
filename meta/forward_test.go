package meta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

func TestWireErrorsRoundTrip(t *testing.T) {
	t.Parallel()
	for code, sentinel := range wireErrors {
		if sentinel == nil {
			continue
		}
		err := fmt.Errorf("%w: some detail", sentinel)
		if got := errorCode(err); got != uint64(code) {
			t.Errorf("%v: code %d, want %d", sentinel, got, code)
		}
		back := errorFromWire(errorCode(err), err.Error())
		if !errors.Is(back, sentinel) || back.Error() != err.Error() {
			t.Errorf("%v came back as %v", sentinel, back)
		}
	}
	if errorCode(nil) != wireOK || errorFromWire(wireOK, "") != nil {
		t.Fatal("success does not round-trip")
	}
	other := errorFromWire(errorCode(errors.New("disk on fire")), "disk on fire")
	if other == nil || !strings.Contains(other.Error(), "disk on fire") {
		t.Fatalf("an error without a sentinel came back as %v", other)
	}
	if errorFromWire(9999, "x") == nil {
		t.Fatal("an unknown code came back as success")
	}
}

func TestReadFrameRefusesOversizedFrames(t *testing.T) {
	t.Parallel()
	var huge bytes.Buffer
	huge.Write(binary.BigEndian.AppendUint32(nil, maxFrameBytes+1))
	if _, err := readFrame(&huge); err == nil {
		t.Fatal("an oversized frame was accepted")
	}
	var ok bytes.Buffer
	if err := writeFrame(&ok, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	if got, err := readFrame(&ok); err != nil || string(got) != "abc" {
		t.Fatalf("%q %v", got, err)
	}
}

// The leader checks forwarded commands before they enter the log: garbage
// from a faulty peer is answered with an error and cannot stop the group.
func TestLeaderRefusesUndecodableForwardedCommands(t *testing.T) {
	n, _ := embedded(t, nil)
	registerBroker(t, n, 1)
	good := mustEncode(t, topicCmd("good", 1, 1))
	garbage := []byte{byte(cmdCreateTopic), 1, 0, '{', 'x'}
	unknown := []byte{222, 1, 0, '{', '}'}
	optional := []byte{222, 1, flagOptional, '{', '}'}
	req := append([]byte{opPropose}, binary.AppendUvarint(nil, 5000)...)
	req = appendBatchBody(req, [][]byte{good, garbage, unknown, optional})
	r := &wireReader{b: n.fwdSrv.handle(req)}
	if code, msg := r.uvarint(), r.string(); code != wireOK {
		t.Fatalf("request failed: %s", msg)
	}
	if count := r.uvarint(); count != 4 {
		t.Fatalf("%d results", count)
	}
	var results []proposalResult
	for range 4 {
		index, epoch := r.uvarint(), r.varint()
		code, msg := r.uvarint(), r.string()
		results = append(results, proposalResult{index: index, epoch: epoch, err: errorFromWire(code, msg)})
	}
	if results[0].index == 0 || results[0].err != nil {
		t.Errorf("good command: %+v", results[0])
	}
	if results[1].index != 0 || !errors.Is(results[1].err, ErrInvalidCommand) {
		t.Errorf("garbage: %+v", results[1])
	}
	if results[2].index != 0 || !errors.Is(results[2].err, ErrUnknownCommand) {
		t.Errorf("unknown command: %+v", results[2])
	}
	if results[3].index == 0 || results[3].err != nil {
		t.Errorf("optional unknown command: %+v", results[3])
	}
	if n.Err() != nil {
		t.Fatalf("the node stopped: %v", n.Err())
	}
	if _, ok := n.State().Topic("good"); !ok {
		t.Fatal("the good command was not applied")
	}
	for _, bad := range [][]byte{{}, {opPropose}, {99, 1}, append([]byte{opHeartbeat, 1}, 0xff)} {
		r := &wireReader{b: n.fwdSrv.handle(bad)}
		if code := r.uvarint(); errorFromWire(code, "") == nil {
			t.Errorf("request %v succeeded", bad)
		}
	}
}

// TestEverySentinelHasAWireCode: every error errors.go declares crosses
// the forwarding RPC as itself. Three did not (credentials and ACLs): a
// client asking a broker that does not lead the metadata group got
// UNKNOWN_SERVER_ERROR where the leader's own broker answered
// RESOURCE_NOT_FOUND, UNACCEPTABLE_CREDENTIAL or INVALID_REQUEST.
func TestEverySentinelHasAWireCode(t *testing.T) {
	t.Parallel()
	file, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	onWire := map[string]bool{
		// Local only: a node's own configuration, and its own watches.
		ErrInvalidNodeConfig.Error(): true,
		ErrWatchOverflow.Error():     true,
	}
	for _, sentinel := range wireErrors {
		if sentinel != nil {
			onWire[sentinel.Error()] = true
		}
	}
	declared := 0
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || !strings.HasPrefix(spec.Names[0].Name, "Err") || len(spec.Values) != 1 {
			return true
		}
		call, ok := spec.Values[0].(*ast.CallExpr)
		if !ok || len(call.Args) != 1 {
			return true
		}
		lit, ok := call.Args[0].(*ast.BasicLit)
		if !ok {
			return true
		}
		message, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatal(err)
		}
		declared++
		if !onWire[message] {
			t.Errorf("%s (%q) has no code in wireErrors: forwarded, it arrives as an error without a sentinel", spec.Names[0].Name, message)
		}
		return true
	})
	if declared < len(wireErrors)-2 {
		t.Fatalf("found %d sentinels in errors.go, fewer than wireErrors holds (%d): the parse missed some", declared, len(wireErrors)-2)
	}
}
