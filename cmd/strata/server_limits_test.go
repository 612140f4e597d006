package main

import (
	"runtime"
	"testing"
)

// TestRaiseProcs: strata server runs with at least minProcs Ps, unless
// the GOMAXPROCS environment variable says otherwise.
func TestRaiseProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))

	t.Setenv("GOMAXPROCS", "")
	runtime.GOMAXPROCS(2)
	if before, after := raiseProcs(); before != 2 || after != minProcs || runtime.GOMAXPROCS(0) != minProcs {
		t.Errorf("raiseProcs from 2 = (%d, %d), GOMAXPROCS %d; want (2, %d)", before, after, runtime.GOMAXPROCS(0), minProcs)
	}

	t.Setenv("GOMAXPROCS", "3")
	runtime.GOMAXPROCS(3)
	if before, after := raiseProcs(); before != 3 || after != 3 || runtime.GOMAXPROCS(0) != 3 {
		t.Errorf("raiseProcs with GOMAXPROCS=3 in the environment = (%d, %d), GOMAXPROCS %d; want it kept at 3", before, after, runtime.GOMAXPROCS(0))
	}
}
