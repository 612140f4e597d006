package remotefetch

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
)

// testBucket is the bucket of the package's versitygw.
const testBucket = "remotefetch-test"

// The package's versitygw, started by the first test that needs it and
// stopped by TestMain; tests of the file store alone never start it.
var versity struct {
	once sync.Once
	gw   *objstoretest.VersityGW
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	// Tests overwrite every block buffer that goes back to the pool, so a
	// read of a block nobody holds shows; benchmarks run as a production
	// broker does (as a build with invariants does not).
	if flag.Lookup("test.bench").Value.String() == "" {
		poisonReleased = true
	}
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

// openS3Store opens an s3:// store on the package's versitygw, through
// endpoint (the server or a fault proxy in front of it), under a prefix of
// the test's own.
func openS3Store(tb testing.TB, endpoint string) objstore.Store {
	tb.Helper()
	gw := versityGW(tb)
	if endpoint == "" {
		endpoint = gw.Endpoint
	}
	s, err := objstore.Open(tb.Context(), objstoretest.S3URL(endpoint, testBucket, sanitize(tb.Name())), gw.Config())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// sanitize turns a test name into a key component.
func sanitize(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}
