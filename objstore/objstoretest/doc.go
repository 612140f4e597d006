// Package objstoretest is what tests of the object store, and of everything
// that uses one, share:
//
//   - Conformance, the suite every objstore backend must pass;
//   - StartVersityGW, which runs a real S3-compatible server (versitygw, from
//     the module's bin/ or PATH, installed by `make test-deps`) on a free
//     loopback port over a temporary directory, and S3URL and MinioURL, the
//     store URLs that point at it;
//   - FaultProxy, an HTTP reverse proxy to put between a store and that
//     server, which injects error statuses, stalls, connection resets and
//     truncated, stalled or corrupted bodies into matching requests, or
//     passes them on untouched (Pass), and records what each rule matched
//     (Rule.Requests: method, URL, headers);
//   - ReadThrough, an object's bytes read through one buffer as fast as the
//     body gives them, the bare streaming read benchmarks compare with.
//
// A typical TestMain starts one server for the package:
//
//	gw, err := objstoretest.StartVersityGW(ctx)
//	// handle err: fail the tests that need S3, naming `make test-deps`
//	defer gw.Stop()
//	err = gw.CreateBucket(ctx, "bucket")
//	store, err := objstore.Open(ctx, objstoretest.S3URL(gw.Endpoint, "bucket", "prefix"), gw.Config())
//
// and a fault test puts a proxy in between:
//
//	proxy, err := objstoretest.NewFaultProxy(gw.Endpoint)
//	defer proxy.Close()
//	store, err := objstore.Open(ctx, objstoretest.S3URL(proxy.URL(), "bucket", "prefix"), gw.Config())
//	rule := proxy.Add(objstoretest.Method(http.MethodGet), objstoretest.Stall(nil), 0)
//	// … start a read; <-rule.Matched(); cancel it; check the error …
package objstoretest
