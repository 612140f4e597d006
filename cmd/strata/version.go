package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is the release version `make release` stamps into the binary
// (go build -ldflags "-X main.version=v1.2.3"); "" in other builds, which
// print the module version the toolchain recorded instead.
var version string

// buildVersion is what `strata version` prints, read from the build
// information the Go toolchain embeds in the binary.
type buildVersion struct {
	Module    string `json:"module"`
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	// Revision, Time and Modified come from the version control system the
	// binary was built in, when it was stamped (go build -buildvcs).
	Revision string `json:"vcs_revision,omitempty"`
	Time     string `json:"vcs_time,omitempty"`
	Modified bool   `json:"vcs_modified,omitempty"`
}

func readBuildVersion() buildVersion {
	v := buildVersion{Module: "github.com/stratalog/strata", Version: "(unknown)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Path != "" {
			v.Module = info.Main.Path
		}
		if info.Main.Version != "" {
			v.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.Time = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		v.Version = version
	}
	return v
}

// runVersion is `strata version` (and `strata --version`).
func runVersion(_ context.Context, e *env, args []string) error {
	var asJSON bool
	fs := newFlagSet(e, "version", "[flags]")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return usageError("version takes no arguments, not %q", rest[0])
	}
	v := readBuildVersion()
	if asJSON {
		return printJSON(e.stdout, v)
	}
	fmt.Fprintf(e.stdout, "strata %s (%s) %s %s\n", v.Version, v.Module, v.GoVersion, v.Platform)
	if v.Revision != "" {
		modified := ""
		if v.Modified {
			modified = ", with uncommitted changes"
		}
		fmt.Fprintf(e.stdout, "built from revision %s (%s%s)\n", v.Revision, v.Time, modified)
	}
	return nil
}
