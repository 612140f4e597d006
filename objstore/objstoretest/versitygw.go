package objstoretest

import (
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stratalog/strata/internal/syncbuf"
	"github.com/stratalog/strata/objstore"
)

// VersityGWVersion is the versitygw release the tests run against;
// scripts/test-deps installs it into the module's bin/.
const VersityGWVersion = "v1.8.0"

// Credentials and region of every versitygw the tests start.
const (
	versityAccessKey = "strata-test"
	versitySecretKey = "strata-test-secret"
	versityRegion    = "us-east-1"
)

// startAttempts bounds the retries of a start that lost its port to another
// process between choosing it and binding it.
const startAttempts = 3

// healthTimeout bounds how long a starting versitygw may take to answer on
// its health endpoint.
const healthTimeout = 20 * time.Second

// VersityGW is a versitygw S3 server on a loopback port, storing objects in a
// temporary directory, started for tests. Its owner stops it with Stop.
type VersityGW struct {
	// Endpoint is the server's base URL, http://127.0.0.1:PORT.
	Endpoint string

	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited
	dataDir string
	output  *syncbuf.Buffer // the process's output, for error messages
	stop    sync.Once
	stopErr error
}

// StartVersityGW starts versitygw from the module's bin/ directory, or from
// PATH, and waits until it answers. It fails, naming `make test-deps`, when
// the binary is missing.
func StartVersityGW(ctx context.Context) (*VersityGW, error) {
	bin, err := versityGWBinary()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range startAttempts {
		g, err := startVersityGW(ctx, bin)
		if err == nil {
			return g, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	return nil, lastErr
}

func startVersityGW(ctx context.Context, bin string) (*VersityGW, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dataDir, err := os.MkdirTemp("", "strata-versitygw-*")
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + port
	g := &VersityGW{
		Endpoint: "http://" + addr,
		exited:   make(chan struct{}),
		dataDir:  dataDir,
		output:   &syncbuf.Buffer{},
	}
	g.cmd = exec.Command(bin,
		"--port", addr,
		"--access", versityAccessKey,
		"--secret", versitySecretKey,
		"--region", versityRegion,
		"--health", "/health",
		"--quiet",
		"posix", dataDir)
	// A fixed environment: versitygw reads settings from VGW_* and other
	// variables, which a developer's shell or a test's t.Setenv must not
	// change.
	g.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	g.cmd.Stdout = g.output
	g.cmd.Stderr = g.output
	g.cmd.SysProcAttr = childProcAttr()
	if err := g.cmd.Start(); err != nil {
		_ = os.RemoveAll(dataDir)
		return nil, fmt.Errorf("objstoretest: starting %s: %w", bin, err)
	}
	go func() {
		_ = g.cmd.Wait()
		close(g.exited)
	}()
	if err := g.waitHealthy(ctx); err != nil {
		_ = g.Stop()
		return nil, err
	}
	return g, nil
}

// waitHealthy polls the health endpoint until it answers 200, the process
// exits, or healthTimeout passes.
func (g *VersityGW) waitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.Endpoint+"/health", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-g.exited:
			return fmt.Errorf("objstoretest: versitygw exited before answering on %s; its output:\n%s", g.Endpoint, g.output.String())
		case <-ctx.Done():
			return fmt.Errorf("objstoretest: versitygw did not answer on %s/health: %w; its output:\n%s", g.Endpoint, ctx.Err(), g.output.String())
		case <-tick.C:
		}
	}
}

// Stop ends the server (SIGTERM, then SIGKILL after ten seconds) and removes
// its data. It may be called more than once.
func (g *VersityGW) Stop() error {
	g.stop.Do(func() {
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-g.exited:
		case <-time.After(10 * time.Second):
			_ = g.cmd.Process.Kill()
			<-g.exited
		}
		g.stopErr = os.RemoveAll(g.dataDir)
	})
	return g.stopErr
}

// Config is objstore.DefaultConfig with the server's credentials and the
// smallest part size, so that tests exercise multipart uploads cheaply.
func (g *VersityGW) Config() objstore.Config {
	cfg := objstore.DefaultConfig()
	cfg.PartSize = objstore.MinPartSize
	cfg.AccessKeyID = versityAccessKey
	cfg.SecretAccessKey = versitySecretKey
	return cfg
}

// Client returns a plain S3 client of the server, for what the store does
// not offer: creating buckets, listing pending multipart uploads.
func (g *VersityGW) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       versityRegion,
		BaseEndpoint: aws.String(g.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(versityAccessKey, versitySecretKey, ""),
	})
}

// CreateBucket creates a bucket.
func (g *VersityGW) CreateBucket(ctx context.Context, bucket string) error {
	if _, err := g.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		return fmt.Errorf("objstoretest: creating bucket %q: %w", bucket, err)
	}
	return nil
}

// S3URL is the s3:// store URL of a bucket and prefix on the S3 server at
// endpoint (a versitygw, or a FaultProxy in front of one).
func S3URL(endpoint, bucket, prefix string) string {
	q := url.Values{"endpoint": {endpoint}, "path_style": {"true"}, "region": {versityRegion}}
	return (&url.URL{Scheme: "s3", Host: bucket, Path: "/" + prefix, RawQuery: q.Encode()}).String()
}

// MinioURL is the minio:// store URL of a bucket and prefix on the S3 server
// at endpoint, which must be a plain-HTTP base URL.
func MinioURL(endpoint, bucket, prefix string) string {
	host := strings.TrimPrefix(endpoint, "http://")
	q := url.Values{"secure": {"false"}, "region": {versityRegion}}
	return (&url.URL{Scheme: "minio", Host: host, Path: "/" + bucket + "/" + prefix, RawQuery: q.Encode()}).String()
}

// versityGWBinary finds versitygw in the module's bin/ directory, then on
// PATH.
func versityGWBinary() (string, error) {
	var tried []string
	if root, err := moduleRoot(); err == nil {
		bin := filepath.Join(root, "bin", "versitygw")
		if fi, err := os.Stat(bin); err == nil && !fi.IsDir() {
			return bin, checkVersion(bin)
		}
		tried = append(tried, bin)
	}
	if bin, err := exec.LookPath("versitygw"); err == nil {
		return bin, checkVersion(bin)
	}
	tried = append(tried, "PATH")
	return "", fmt.Errorf("objstoretest: versitygw %s not found (looked in %s): run `make test-deps` to install it", VersityGWVersion, strings.Join(tried, " and "))
}

// checkVersion reads the module version a Go binary was built from, so that
// the tests never run against another versitygw than the one they expect.
func checkVersion(bin string) error {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("objstoretest: reading the build of %s: %w; run `make test-deps`", bin, err)
	}
	if v := info.Main.Version; v != VersityGWVersion {
		return fmt.Errorf("objstoretest: %s is versitygw %s, the tests need %s: run `make test-deps`", bin, v, VersityGWVersion)
	}
	return nil
}

// moduleRoot is the nearest directory above the working directory (a test's
// package directory) holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("objstoretest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// freePort asks the OS for a free loopback port. Another process may take
// it before versitygw binds it; StartVersityGW retries then.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}
