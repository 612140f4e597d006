package objstore_test

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
)

// Config.MaxConnections bounds the connections a store opens to its
// endpoint: eight reads held at the proxy at once get no more than the
// bound's connections, and every read still completes. Unbounded, the same
// eight reads open eight, which shows the count would catch a store that
// ignores the setting.
func TestMaxConnections(t *testing.T) {
	t.Parallel()
	gw := versityGW(t)
	const readers = 8
	for _, b := range s3Backends {
		for _, bound := range []int{2, 0} {
			t.Run(b.name+"/"+map[int]string{2: "bounded", 0: "unbounded"}[bound], func(t *testing.T) {
				t.Parallel()
				proxy, err := objstoretest.NewFaultProxy(gw.Endpoint)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(proxy.Close)
				cfg := gw.Config()
				cfg.MaxConnections = bound
				s, err := objstore.Open(t.Context(), b.url(t, proxy.URL(), "connections-"+b.name), cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				data := objstoretest.Data("object", 10_000)
				if err := s.Put(t.Context(), "object", bytes.NewReader(data), int64(len(data))); err != nil {
					t.Fatal(err)
				}

				release := make(chan struct{})
				held := proxy.Add(objstoretest.Method(http.MethodGet), objstoretest.Stall(release), 0)
				var wg sync.WaitGroup
				errs := make(chan error, readers)
				for range readers {
					wg.Go(func() {
						r, err := s.Get(t.Context(), "object", 0, int64(len(data)))
						if err != nil {
							errs <- err
							return
						}
						defer r.Close()
						got, err := io.ReadAll(r)
						if err == nil && !bytes.Equal(got, data) {
							err = io.ErrUnexpectedEOF
						}
						errs <- err
					})
				}
				// Wait until as many reads as may be in flight are held.
				want := int64(readers)
				if bound > 0 {
					want = int64(bound)
				}
				deadline := time.Now().Add(30 * time.Second)
				for held.Hits() < want {
					if time.Now().After(deadline) {
						t.Fatalf("%d of %d reads reached the proxy", held.Hits(), want)
					}
					time.Sleep(5 * time.Millisecond)
				}
				close(release)
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						t.Errorf("Get: %v", err)
					}
				}
				// The Put's connection may be one of them, or one more when
				// it was closed before the reads began.
				peak := proxy.PeakConnections()
				switch {
				case bound > 0 && peak > bound:
					t.Errorf("MaxConnections %d, but %d connections were open at once", bound, peak)
				case bound == 0 && peak < readers:
					t.Errorf("unbounded store held %d reads at once on only %d connections", readers, peak)
				}
			})
		}
	}
}
