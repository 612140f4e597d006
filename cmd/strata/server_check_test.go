package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/syncbuf"
	"github.com/stratalog/strata/tlsfiles/tlstest"
)

// checkFiles are the files a secured broker's config file names: its
// PKI, the inter-broker password and the admin token.
type checkFiles struct {
	pki                tlstest.PKI
	password, token    string
	brokenPEM, missing string
}

func writeCheckFiles(t *testing.T) checkFiles {
	t.Helper()
	dir := t.TempDir()
	return checkFiles{
		pki:       tlstest.Write(t, filepath.Join(dir, "pki"), "127.0.0.1"),
		password:  writeFile(t, dir, "broker.password", "broker-secret\n"),
		token:     writeFile(t, dir, "admin.token", "admin-token\n"),
		brokenPEM: writeFile(t, dir, "broken.pem", "-----BEGIN PRIVATE KEY-----\nnot base64\n"),
		missing:   filepath.Join(dir, "missing"),
	}
}

// clusterBrokerConfig is broker 2 of three in three zones, the config
// file a deployment renders: SASL_SSL listeners, mutual TLS on the
// metadata port, the shared bucket in S3 with SSE-KMS, an admin token.
// Its addresses are other machines'; --check binds none of them.
func clusterBrokerConfig(f checkFiles, dataDir string) string {
	return `# broker 2 of 3
node-id = 2
broker.rack = eu-west-1b
data = ` + dataDir + `
listeners = INTERNAL://0.0.0.0:9094,CLIENT://0.0.0.0:9092
advertised.listeners = INTERNAL://10.0.2.10:9094,CLIENT://b2.kafka.example.com:9092
listener.security.protocol.map = INTERNAL:SASL_SSL,CLIENT:SASL_SSL
inter.broker.listener.name = INTERNAL
admin-listen = 0.0.0.0:9644
meta-listen = 0.0.0.0:9093
meta-peers = 1=10.0.1.10:9093,2=10.0.2.10:9093,3=10.0.3.10:9093
ssl.keystore.location = ` + f.pki.ServerKeystore + `
ssl.truststore.location = ` + f.pki.CAFile + `
ssl.client.auth = requested
sasl.enabled.mechanisms = SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol = SCRAM-SHA-512
sasl.inter.broker.username = broker
sasl.inter.broker.password.file = ` + f.password + `
super.users = User:admin
admin.token.file = ` + f.token + `
bucket = s3://strata-prod/cluster-a?region=eu-west-1&sse=aws:kms&sse_kms_key_id=alias/strata
default.replication.factor = 3
max.broker.partitions = 100
`
}

// singleNodeConfig is a secured single node on loopback ports the kernel
// picks, with its bucket under its data directory: one that can start
// here.
func singleNodeConfig(f checkFiles, dataDir string) string {
	return `data = ` + dataDir + `
listeners = SASL_SSL://127.0.0.1:0
admin-listen = 127.0.0.1:0
meta-listen = 127.0.0.1:0
meta-advertise = 127.0.0.1:19093
ssl.keystore.location = ` + f.pki.ServerKeystore + `
ssl.truststore.location = ` + f.pki.CAFile + `
sasl.inter.broker.username = broker
sasl.inter.broker.password.file = ` + f.password + `
admin.token.file = ` + f.token + `
`
}

// TestServerCheckAcceptsAValidConfig: a cluster broker's config file
// passes --check on a machine that has none of its addresses, with one
// line on standard output, and leaves no trace: the data directory is not
// even created.
func TestServerCheckAcceptsAValidConfig(t *testing.T) {
	t.Parallel()
	f := writeCheckFiles(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	config := writeFile(t, t.TempDir(), "strata.conf", clusterBrokerConfig(f, dataDir))

	code, stdout, stderr := runCLI(t, "", "server", "--check", "--config", config)
	if code != exitOK || strings.Count(stdout, "\n") != 1 || !strings.HasPrefix(stdout, "strata server: "+config+" and the flags make a valid configuration: node 2, listeners INTERNAL://0.0.0.0:9094,CLIENT://0.0.0.0:9092,") ||
		!strings.Contains(stdout, "bucket s3://strata-prod/cluster-a?") || strings.Contains(stderr, "level=ERROR") {
		t.Fatalf("server --check: exit %d, stdout %q, stderr %q; want exit 0 and one line saying it is valid", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, "", "server", "--check", "--json", "--config", config)
	var got checkResult
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != exitOK || !got.Valid || got.NodeID != 2 || len(got.MetaPeers) != 3 {
		t.Errorf("server --check --json: exit %d, %q (%v)", code, stdout, err)
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--check touched the data directory: %v", err)
	}
}

// TestServerCheckRefusesAsAStartDoes: each bad configuration fails --check
// with the very line and exit status a start fails with, naming the
// setting.
func TestServerCheckRefusesAsAStartDoes(t *testing.T) {
	t.Parallel()
	f := writeCheckFiles(t)
	for _, tc := range []struct {
		name  string
		extra string // lines added to a valid single node's file
		want  string
	}{
		{"an unknown setting", "retention = forever\n", `unknown setting "retention"`},
		{"check in the file", "check = true\n", "check is a command-line flag"},
		{"a value that does not parse", "num.partitions = many\n", "num.partitions: "},
		{"a keystore that is missing", "ssl.keystore.location = " + f.missing + "\n", "TLS: "},
		{"a keystore that is not PEM", "ssl.keystore.location = " + f.brokenPEM + "\n", "TLS: "},
		{"a listener without a protocol", "listeners = REPLICATION://127.0.0.1:0\n", "listener.security.protocol.map"},
		{"an inter-broker password file missing", "sasl.inter.broker.password.file = " + f.missing + "\n", "--sasl.inter.broker.password.file"},
		{"an admin token file missing", "admin.token.file = " + f.missing + "\n", "admin address: admin token file"},
		{"a broker setting out of range", "socket.request.max.bytes = 10\n", "socket.request.max.bytes"},
		{"a bucket URL that does not parse", "bucket = s3:/no-bucket\n", "--bucket: objstore: invalid store URL"},
		{"a cluster without a shared bucket", "meta-peers = 1=127.0.0.1:19093,2=127.0.0.1:19094,3=127.0.0.1:19095\n", "give each the same --bucket"},
		{"meta peers that do not parse", "meta-peers = 1=nowhere\n", "--meta-peers"},
		{"a metadata port on every interface with nothing to advertise", "meta-advertise =\nmeta-listen = 0.0.0.0:19093\n", "--meta-advertise"},
		{"a session timeout too short", "broker.session.timeout.ms = 100\n", "broker.session.timeout.ms 100"},
		{"an admin address without a port", "admin-listen = localhost\n", "--admin-listen localhost: address localhost: missing port"},
		{"two of the server's ports the same", "admin-listen = 127.0.0.1:19644\nmeta-listen = 127.0.0.1:19644\n", "both on one port"},
		{"an upload rate under the floor", "remote.log.manager.copy.max.bytes.per.second = 5\n", "--remote.log.manager.copy.max.bytes.per.second 5"},
		{"a negative retire delay", "remote-retire-delay = -1s\n", "--remote-retire-delay -1s"},
		{"a remote cache smaller than a block", "remote-cache-bytes = 1024\n", "--remote-cache-bytes 1024"},
		{"no cleaner thread", "log.cleaner.threads = 0\n", "--log.cleaner.threads=0"},
		{"a cleaner map too small", "log.cleaner.dedupe.buffer.size = 1000\n", "--log.cleaner.dedupe.buffer.size=1000"},
		{"a negative cleaner rate", "log.cleaner.io.max.bytes.per.second = -1\n", "--log.cleaner.io.max.bytes.per.second -1"},
		{"a cleaner backoff of zero", "log.cleaner.backoff.ms = 0\n", "--log.cleaner.backoff.ms=0"},
		{"a disk journal file under 1 MiB", "disk-journal-bytes = 4096\n", "disk-journal-bytes 4096: want 0 (off) or at least 1048576"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dataDir := t.TempDir()
			config := writeFile(t, t.TempDir(), "strata.conf", singleNodeConfig(f, dataDir)+tc.extra)
			code, stdout, stderr := runCLI(t, "", "server", "--check", "--config", config)
			line := lastLine(stderr)
			if code != exitBadArgs || stdout != "" || !strings.HasPrefix(line, "strata server: ") || !strings.Contains(line, tc.want) {
				t.Fatalf("server --check: exit %d, stdout %q, stderr %q; want exit 2 and a line saying %q", code, stdout, stderr, tc.want)
			}
			startCode, _, startStderr := runCLI(t, "", "server", "--config", config)
			if startCode != code || lastLine(startStderr) != line {
				t.Errorf("a start: exit %d, stderr %q; --check: exit %d, %q; want the same", startCode, startStderr, code, line)
			}
		})
	}
}

// TestServerCheckBindsNothing runs --check with every port of the
// configuration taken and the data directory locked by the test: it
// passes, where a start fails on the lock and then on the ports.
func TestServerCheckBindsNothing(t *testing.T) {
	t.Parallel()
	f := writeCheckFiles(t)
	var taken []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		taken = append(taken, ln.Addr().String())
	}
	dataDir := t.TempDir()
	config := writeFile(t, t.TempDir(), "strata.conf", singleNodeConfig(f, dataDir)+
		"listeners = SASL_SSL://"+taken[0]+"\nadmin-listen = "+taken[1]+"\nmeta-listen = "+taken[2]+"\n")
	lock, err := lockDataDir(dataDir)
	if err != nil {
		t.Fatal(err)
	}

	if code, stdout, stderr := runCLI(t, "", "server", "--check", "--config", config); code != exitOK || !strings.Contains(stdout, "valid configuration") {
		t.Fatalf("server --check with its ports taken and its data directory locked: exit %d, stdout %q, stderr %q; want it valid", code, stdout, stderr)
	}
	if entries, _ := os.ReadDir(dataDir); len(entries) != 1 {
		t.Errorf("--check wrote to the data directory: %v (want only the test's LOCK)", entries)
	}
	if code, _, stderr := runCLI(t, "", "server", "--config", config); code != exitFailed || !strings.Contains(stderr, "data directory in use") {
		t.Errorf("a start with the data directory locked: exit %d, stderr %q", code, stderr)
	}
	lock.release()
	if code, _, stderr := runCLI(t, "", "server", "--config", config); code != exitFailed || !strings.Contains(stderr, "--listeners SASL_SSL "+taken[0]+": address already in use") {
		t.Errorf("a start with its ports taken: exit %d, stderr %q", code, stderr)
	}
}

// TestServerCheckedConfigStarts: a secured single node's config file that
// --check accepts is one a start accepts: it binds, opens the metadata
// node and the bucket, creates its inter-broker user, serves, and shuts
// down cleanly.
func TestServerCheckedConfigStarts(t *testing.T) {
	t.Parallel()
	f := writeCheckFiles(t)
	config := writeFile(t, t.TempDir(), "strata.conf", singleNodeConfig(f, t.TempDir()))
	if code, stdout, stderr := runCLI(t, "", "server", "--check", "--config", config); code != exitOK {
		t.Fatalf("server --check: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout bytes.Buffer
	var stderr syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}, []string{"server", "--config", config})
	}()
	for !strings.Contains(stderr.String(), `msg="serving Kafka clients"`) {
		select {
		case code := <-done:
			t.Fatalf("the start exited %d before it served: %s", code, stderr.String())
		case <-ctx.Done():
			t.Fatalf("not serving within a minute: %s", stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("the server exited %d on shutdown: %s", code, stderr.String())
	}
}

// lastLine is the last line of out, which holds at least one: a failing
// command's error, after what it logged.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestLoopbackAddress: the metadata port's warning is for addresses other
// machines may reach.
func TestLoopbackAddress(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:9093": true, "[::1]:9093": true, "localhost:9093": true, "127.5.6.7:1": true,
		"0.0.0.0:9093": false, ":9093": false, "10.0.1.10:9093": false, "[::]:9093": false, "broker-1:9093": false, "nonsense": false,
	} {
		if got := loopbackAddress(addr); got != want {
			t.Errorf("loopbackAddress(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestAPlainMetadataPortBesideAuthenticatingListenersIsWarnedOf: SASL
// listeners without a keystore leave the metadata port plain TCP; bound
// where other machines reach it, anyone there could change the metadata
// unchecked, and the server says so, with the fix. On loopback it does not.
func TestAPlainMetadataPortBesideAuthenticatingListenersIsWarnedOf(t *testing.T) {
	t.Parallel()
	f := writeCheckFiles(t)
	for metaListen, warned := range map[string]bool{"0.0.0.0:9093": true, "127.0.0.1:9093": false} {
		config := writeFile(t, t.TempDir(), "strata.conf", `data = `+filepath.Join(t.TempDir(), "data")+`
listeners = SASL_PLAINTEXT://127.0.0.1:0
admin-listen = 127.0.0.1:0
meta-listen = `+metaListen+`
meta-advertise = 127.0.0.1:19093
sasl.inter.broker.username = broker
sasl.inter.broker.password.file = `+f.password+`
`)
		code, _, stderr := runCLI(t, "", "server", "--check", "--config", config)
		if code != exitOK {
			t.Fatalf("meta-listen %s: server --check: exit %d, stderr %q", metaListen, code, stderr)
		}
		if got := strings.Contains(stderr, "the metadata (Raft) port takes plain TCP from anyone who reaches it"); got != warned {
			t.Errorf("meta-listen %s: warned %v, want %v; stderr %q", metaListen, got, warned, stderr)
		}
	}
}
