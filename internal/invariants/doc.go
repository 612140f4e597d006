// Package invariants says whether this build checks the broker's
// invariants at a cost a production build does not pay. Build with
// `-tags invariants` to turn the checks on; the integration suite builds
// the strata binary it runs that way (benchmarks excepted), so every test
// of a real broker process runs them.
//
// What the checks are: buffers that go back to a pool are overwritten
// first, so a read of one after its last holder let it go shows as
// corrupt data rather than passing on bytes that happen to still be
// there (ingest's produce frames, remotefetch's block buffers, the
// response buffer of an interbroker.Conn before it reads the next).
// Unit tests turn the same checks on for the pools they build.
package invariants
