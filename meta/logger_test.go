package meta

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestHCLogAdapterWritesToSlog(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	a := newHCLogAdapter(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), "raft")
	a.Debug("hidden")
	a.Named("net").With("peer", "n2").Warn("heartbeat failed", "error", "timeout")
	a.StandardLogger(nil).Print("from the standard logger")
	out := buf.String()
	for _, want := range []string{"level=WARN", "heartbeat failed", "component=raft.net", "peer=n2", "error=timeout", "from the standard logger"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hidden") {
		t.Error("a debug line passed an info handler")
	}
	if a.IsDebug() || !a.IsInfo() || a.GetLevel() != hclog.Info {
		t.Errorf("levels: debug %v info %v level %v", a.IsDebug(), a.IsInfo(), a.GetLevel())
	}
}
