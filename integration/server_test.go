package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/syncbuf"
)

// strataBinary is the strata binary TestMain builds.
var strataBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "strata-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	strataBinary = filepath.Join(dir, "strata")
	// Tests run a broker that checks its invariants (internal/invariants:
	// recycled buffers overwritten), benchmarks a production build.
	flag.Parse()
	tags := "invariants"
	if flag.Lookup("test.bench").Value.String() != "" {
		tags = ""
		fmt.Fprintln(os.Stderr, "integration: strata built without -tags invariants, for benchmarks; tests run beside them use it too")
	}
	build := exec.Command("go", "build", "-tags", tags, "-o", strataBinary, "github.com/stratalog/strata/cmd/strata")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building strata:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is one `strata server` process.
type server struct {
	t       testing.TB
	dataDir string
	kafka   string // host:port
	admin   string
	meta    string
	// registry is the schema registry's address, chosen at the first
	// launch unless extra sets --schema.registry.listen.
	registry string
	extra    []string
	env      []string // added to the process environment
	// wrapper, when set, is a command that execs strata with the rest of
	// its arguments (prlimit, to start it under other limits).
	wrapper []string
	// adminTLS, when set, is how to reach an admin address that serves
	// TLS (a server with security on).
	adminTLS *tls.Config
	cmd      *exec.Cmd
	log      *syncbuf.Buffer // the process's combined output
	exited   chan struct{}
}

// nextPort is the next port freePort tries; it starts at a random place
// so that test processes running at once rarely try the same ports.
var nextPort atomic.Int32

// freePort returns a loopback address with a port nobody listens on now,
// for a server process the test starts and tells the port (it binds it
// later). The port comes from below the kernel's ephemeral range, so no
// outgoing connection, of this process or another, can be given it in
// between, as can happen with a port the kernel chose (":0"): that was a
// real "address already in use" flake.
func freePort(t testing.TB) string {
	t.Helper()
	low, high := int32(10000), ephemeralPortsStart()
	nextPort.CompareAndSwap(0, low+rand.Int32N(high-low))
	for range high - low {
		port := nextPort.Add(1)
		if port >= high {
			nextPort.CompareAndSwap(port, low)
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		ln.Close()
		return ln.Addr().String()
	}
	t.Fatalf("no free loopback port in [%d, %d)", low, high)
	return ""
}

// ephemeralPortsStart is the first port the kernel hands out for outgoing
// connections (net.ipv4.ip_local_port_range), 32768 if unknown.
func ephemeralPortsStart() int32 {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n <= 11000 || n > 65535 {
		return 32768
	}
	return int32(n)
}

// startServer starts a single-node server with its data in a fresh
// directory; extra flags are appended. It returns once /readyz says ready.
func startServer(t testing.TB, extra ...string) *server {
	t.Helper()
	return startServerAt(t, freePort(t), extra...)
}

// startServerAt is startServer with the Kafka listener at kafka.
func startServerAt(t testing.TB, kafka string, extra ...string) *server {
	t.Helper()
	return startServerEnv(t, kafka, nil, extra...)
}

// startServerEnv is startServerAt with env (NAME=value) added to the
// process environment, for bucket credentials.
func startServerEnv(t testing.TB, kafka string, env []string, extra ...string) *server {
	t.Helper()
	s := &server{t: t, dataDir: t.TempDir(), kafka: kafka, admin: freePort(t), meta: freePort(t), extra: extra, env: env}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *server) start() {
	s.t.Helper()
	s.launch()
	s.waitReady()
}

// launch starts the process without waiting for it to be ready: the
// voters of a metadata group become ready only together.
func (s *server) launch() {
	s.t.Helper()
	args := []string{"server", "--admin-listen", s.admin, "--meta-listen", s.meta, "--data", s.dataDir, "--log-level", "debug"}
	if !slices.Contains(s.extra, "--schema.registry.listen") {
		if s.registry == "" {
			s.registry = freePort(s.t)
		}
		args = append(args, "--schema.registry.listen", s.registry)
	}
	if !slices.Contains(s.extra, "--listeners") { // else s.kafka is one of them
		args = append(args, "--listen", s.kafka)
	}
	args = append(args, s.extra...)
	argv := append(append(slices.Clone(s.wrapper), strataBinary), args...)
	s.cmd = exec.Command(argv[0], argv[1:]...)
	if s.env != nil {
		s.cmd.Env = append(os.Environ(), s.env...)
	}
	s.log = &syncbuf.Buffer{}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		cmd.Wait()
		close(exited)
	}(s.cmd, s.exited)
}

// waitReady polls /readyz: starting a process has no event to wait on. It
// fails the test if the process exits first or takes over a minute.
func (s *server) waitReady() {
	s.t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	client, url := adminHTTP, "http://"+s.admin+"/readyz"
	if s.adminTLS != nil {
		client, url = &http.Client{Transport: &http.Transport{TLSClientConfig: s.adminTLS}, Timeout: adminHTTP.Timeout}, "https://"+s.admin+"/readyz"
	}
	for time.Now().Before(deadline) {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-s.exited:
			s.t.Fatalf("strata server exited before it was ready:\n%s", s.log)
		case <-tick.C:
		}
	}
	s.t.Fatalf("strata server not ready after a minute:\n%s", s.log)
}

// kill stops the process with SIGKILL: no shutdown code runs.
func (s *server) kill() {
	s.t.Helper()
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// restart starts the server again on the same ports and data.
func (s *server) restart() {
	s.t.Helper()
	s.start()
}

// stop shuts the server down with SIGTERM, as an operator would, and
// fails the test if it does not exit cleanly.
func (s *server) stop() {
	defer s.logTailIfFailed()
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
		s.t.Errorf("strata server did not stop within 30s of SIGTERM:\n%s", s.log)
		return
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		s.t.Errorf("strata server exited with %d:\n%s", code, s.log)
	}
}

// failedLogLines is how many of a server's last log lines above debug a
// failed test prints, so a failure seen only in a full run (CI) can be
// read afterwards.
const failedLogLines = 60

// logTailIfFailed prints, when the test has failed, the last
// failedLogLines lines of the server's log that are not at debug level
// (the latest incarnation's, for a restarted server).
func (s *server) logTailIfFailed() {
	if !s.t.Failed() {
		return
	}
	var lines []string
	for line := range strings.Lines(s.log.String()) {
		if !strings.Contains(line, "level=DEBUG") {
			lines = append(lines, line)
		}
	}
	lines = lines[max(0, len(lines)-failedLogLines):]
	s.t.Logf("the test failed; strata server (admin %s), its last %d lines above debug:\n%s", s.admin, len(lines), strings.Join(lines, ""))
}

// strata runs the CLI against this server and returns its standard output.
func (s *server) strata(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, strataBinary, args...)
	cmd.Env = append(os.Environ(), "STRATA_BOOTSTRAP="+s.kafka, "STRATA_ADMIN="+s.admin)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("strata %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}
