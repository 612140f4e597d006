package objstore_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
)

func TestConformanceFile(t *testing.T) {
	t.Parallel()
	s, dir := openFile(t)
	objstoretest.Conformance(t, s)
	assertNoTempFiles(t, dir) // failed and canceled puts cleaned up
}

func TestConformanceS3(t *testing.T) {
	t.Parallel()
	gw := versityGW(t)
	objstoretest.Conformance(t, s3Backends[0].open(t, gw.Endpoint, "conformance-s3"))
}

func TestConformanceMinio(t *testing.T) {
	t.Parallel()
	gw := versityGW(t)
	objstoretest.Conformance(t, s3Backends[1].open(t, gw.Endpoint, "conformance-minio"))
}

// The instrumentation wrapper must not change what a store does.
func TestConformanceInstrumented(t *testing.T) {
	t.Parallel()
	s, _ := openFile(t)
	objstoretest.Conformance(t, objstore.Instrument(s, prometheus.NewRegistry()))
}
