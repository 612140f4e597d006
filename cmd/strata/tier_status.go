package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/stratalog/strata/offload"
)

// runTierStatus is `strata tier status [TOPIC]`: it asks a server's admin
// address for offload's status (tierStatusPath) and prints, per tiered
// partition the server leads, the local log start, the tiered end, what
// awaits upload, the last upload and the last error.
func runTierStatus(ctx context.Context, e *env, args []string) error {
	var (
		admin   adminFlags
		asJSON  bool
		timeout time.Duration
	)
	fs := newFlagSet(e, "tier status", "[TOPIC] [flags]")
	admin.register(fs, nil)
	fs.BoolVar(&asJSON, "json", false, "print JSON instead of a table, and errors as JSON on standard error")
	fs.DurationVar(&timeout, "timeout", 10*time.Second, "give up after this long")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 1 {
		return usageError("tier status takes at most one topic, not %q", rest)
	}
	topic := ""
	if len(rest) == 1 {
		topic = rest[0]
		if err := checkTopicName("topic", topic); err != nil {
			return err
		}
	}
	adminClient, err := admin.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	status, err := fetchTierStatus(ctx, adminClient, topic)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(e.stdout, status)
	}
	printTierStatus(e, status)
	return nil
}

func printTierStatus(e *env, s *offload.Status) {
	if s.DiskFull {
		fmt.Fprintf(e.stdout, "HOT DISK FULL (%.0f%% used): produce is refused until offload frees space\n\n", 100*s.DiskUsedRatio)
	}
	tw := newTable(e.stdout, "TOPIC", "PARTITION", "LOCAL-START", "REMOTE-START", "TIERED-END", "AWAITING-UPLOAD", "LAST-UPLOAD", "LAST-ERROR")
	for _, p := range s.Partitions {
		awaiting := fmt.Sprintf("%d B in %d segments", p.BytesAwaitingUpload, p.SegmentsAwaitingUpload)
		if p.Stalled {
			awaiting += fmt.Sprintf(" (STALLED: %s)", p.StallReason)
		}
		last := "-"
		if !p.LastUpload.IsZero() {
			last = p.LastUpload.UTC().Format(time.RFC3339)
		}
		lastErr := "-"
		if p.LastError != "" {
			lastErr = p.LastErrorTime.UTC().Format(time.RFC3339) + " " + p.LastError
		}
		tw.row(p.Topic, p.Partition, p.LocalLogStartOffset, p.RemoteLogStartOffset, p.HighestTieredOffset, awaiting, last, lastErr)
	}
	tw.flush()
}

// fetchTierStatus asks the admin server for the tier status, of topic's
// partitions alone when topic is not "" (an unknown topic is an error).
func fetchTierStatus(ctx context.Context, admin *adminClient, topic string) (*offload.Status, error) {
	path := tierStatusPath
	if topic != "" {
		path += "?" + url.Values{"topic": {topic}}.Encode()
	}
	var status offload.Status
	if err := admin.getJSON(ctx, path, "tier status", &status); err != nil {
		return nil, err
	}
	return &status, nil
}
