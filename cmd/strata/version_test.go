package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stampFlag is how `make release` stamps the version: the Makefile's
// release recipe must pass it, and version.go must declare the variable.
const stampFlag = "-X main.version="

// TestVersionStamp builds strata stamped as `make release` stamps it and
// runs `strata version`: the stamped version is the one printed, in text
// and in JSON. Only the link step differs from a plain build, so with the
// build cache warm this takes seconds.
func TestVersionStamp(t *testing.T) {
	t.Parallel()
	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(makefile), stampFlag) {
		t.Fatalf("the Makefile does not stamp releases with %q, the variable version.go reads", stampFlag)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build a stamped binary: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const stamped = "v9.8.7-test.1"
	binary := filepath.Join(t.TempDir(), "strata")
	build := exec.CommandContext(ctx, goTool, "build", "-ldflags", stampFlag+stamped, "-o", binary, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s%s: %v\n%s", stampFlag, stamped, err, out)
	}

	out, err := exec.CommandContext(ctx, binary, "version").Output()
	if first, _, _ := strings.Cut(string(out), "\n"); err != nil || !strings.HasPrefix(first, "strata "+stamped+" (github.com/stratalog/strata) go") {
		t.Errorf("strata version: %v, %q; want its first line to start %q", err, out, "strata "+stamped+" (github.com/stratalog/strata) go")
	}
	out, err = exec.CommandContext(ctx, binary, "version", "--json").Output()
	var v buildVersion
	if err == nil {
		err = json.Unmarshal(out, &v)
	}
	if err != nil || v.Version != stamped || v.Module != "github.com/stratalog/strata" {
		t.Errorf("strata version --json: %v, %q; want version %q", err, out, stamped)
	}
}
