package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/objstore/objstoretest"
)

// testBucket is the bucket the S3 tests tier to: "strata" on a versitygw
// started for the test.
const testBucket = "strata"

// startVersityGW starts versitygw with testBucket created, and stops it
// when the test ends.
func startVersityGW(t testing.TB) *objstoretest.VersityGW {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gw, err := objstoretest.StartVersityGW(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Stop() })
	if err := gw.CreateBucket(ctx, testBucket); err != nil {
		t.Fatal(err)
	}
	return gw
}

// startFaultProxy puts a fault proxy in front of gw for the test.
func startFaultProxy(t testing.TB, gw *objstoretest.VersityGW) *objstoretest.FaultProxy {
	t.Helper()
	proxy, err := objstoretest.NewFaultProxy(gw.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	return proxy
}

// bucketEnv is the environment that gives a strata process gw's
// credentials, as an operator passes them.
func bucketEnv(gw *objstoretest.VersityGW) []string {
	cfg := gw.Config()
	return []string{"AWS_ACCESS_KEY_ID=" + cfg.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + cfg.SecretAccessKey}
}
