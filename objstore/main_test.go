package objstore_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
)

// testBucket is the bucket of the package's versitygw.
const testBucket = "strata-test"

// The package's versitygw, started by the first test that needs it and
// stopped by TestMain. Fuzz workers and tests of the file backend alone never
// start it.
var versity struct {
	once sync.Once
	gw   *objstoretest.VersityGW
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if versity.gw != nil {
		if err := versity.gw.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping versitygw:", err)
		}
	}
	os.Exit(code)
}

// versityGW returns the package's versitygw, starting it if needed. A test
// that needs it fails, never skips, when it cannot start.
func versityGW(tb testing.TB) *objstoretest.VersityGW {
	tb.Helper()
	versity.once.Do(func() {
		ctx := context.Background()
		versity.gw, versity.err = objstoretest.StartVersityGW(ctx)
		if versity.err == nil {
			versity.err = versity.gw.CreateBucket(ctx, testBucket)
		}
	})
	if versity.err != nil {
		tb.Fatalf("the S3 tests need versitygw: %v", versity.err)
	}
	return versity.gw
}

// backend opens a store of a kind under a prefix of its own, closed when the
// test ends. The S3 kinds go through endpoint, a versitygw or a proxy in
// front of one.
type backend struct {
	name string
	url  func(tb testing.TB, endpoint, prefix string) string
}

var s3Backends = []backend{
	{"s3", func(_ testing.TB, endpoint, prefix string) string {
		return objstoretest.S3URL(endpoint, testBucket, prefix)
	}},
	{"minio", func(_ testing.TB, endpoint, prefix string) string {
		return objstoretest.MinioURL(endpoint, testBucket, prefix)
	}},
}

func (b backend) open(tb testing.TB, endpoint, prefix string) objstore.Store {
	tb.Helper()
	s, err := objstore.Open(tb.Context(), b.url(tb, endpoint, prefix), versityGW(tb).Config())
	if err != nil {
		tb.Fatalf("Open %s: %v", b.name, err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// openFile opens a file:// store in a fresh directory.
func openFile(tb testing.TB) (objstore.Store, string) {
	tb.Helper()
	dir := tb.TempDir()
	s, err := objstore.Open(tb.Context(), "file://"+dir, objstore.DefaultConfig())
	if err != nil {
		tb.Fatalf("Open file: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s, dir
}

// The version the tests expect is the one scripts/test-deps installs.
func TestVersityGWVersionMatchesTestDeps(t *testing.T) {
	t.Parallel()
	script, err := os.ReadFile("../scripts/test-deps")
	if err != nil {
		t.Fatal(err)
	}
	if want := "versitygw_version=" + objstoretest.VersityGWVersion + "\n"; !strings.Contains(string(script), want) {
		t.Fatalf("scripts/test-deps does not set %q", strings.TrimSpace(want))
	}
}
