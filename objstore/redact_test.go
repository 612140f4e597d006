package objstore_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stratalog/strata/objstore"
)

// A Config never shows its credentials, however it is printed, logged or
// encoded, and still shows everything else.
func TestConfigHidesCredentials(t *testing.T) {
	t.Parallel()
	cfg := objstore.DefaultConfig()
	cfg.AccessKeyID = "AKIAKEYID0123456789"
	cfg.SecretAccessKey = "SECRETwJalrXUtnFEMI"
	cfg.SessionToken = "TOKENFwoGZXIvYXdzE"
	cfg.MaxConnections = 77
	secrets := []string{cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken}

	var outputs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x", "%X", "%10.3v"} {
		outputs = append(outputs, fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, &cfg))
	}
	outputs = append(outputs,
		fmt.Sprint(cfg), fmt.Sprintln(cfg),
		fmt.Errorf("opening: %v", cfg).Error(),
		fmt.Sprintf("%v", []objstore.Config{cfg}),
		fmt.Sprintf("%+v", struct{ Store objstore.Config }{cfg}),
		fmt.Sprintf("%v", map[string]objstore.Config{"store": cfg}),
	)
	for _, newHandler := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var b bytes.Buffer
		log := slog.New(newHandler(&b))
		log.Info("open", "config", cfg)
		log.Info("open", "config", &cfg)
		log.Info("open", slog.Any("config", cfg))
		log.Info("open", "wrapped", struct{ Store objstore.Config }{cfg})
		outputs = append(outputs, b.String())
	}
	for _, v := range []any{cfg, &cfg, struct{ Store objstore.Config }{cfg}} {
		js, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, string(js))
	}

	for _, out := range outputs {
		for _, secret := range secrets {
			if strings.Contains(out, secret) {
				t.Errorf("output shows credential %q: %s", secret, out)
			}
		}
	}
	for verb, want := range map[string][]string{
		"%+v": {"PartSize:16777216", "MaxConnections:77", "AccessKeyID:xxxxx", "SecretAccessKey:xxxxx", "SessionToken:xxxxx"},
		"%#v": {"objstore.Config{", `SecretAccessKey:"xxxxx"`},
		"%v":  {"16777216 4 xxxxx xxxxx xxxxx 77"},
	} {
		got := fmt.Sprintf(verb, cfg)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("Sprintf(%q) = %s, want it to show %s", verb, got, w)
			}
		}
	}

	// Unset credentials show as empty, so a printout tells which are set.
	cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken = "", "", ""
	if got := fmt.Sprintf("%+v", cfg); !strings.Contains(got, "AccessKeyID: SecretAccessKey: SessionToken: ") {
		t.Errorf("Sprintf(%%+v) of a Config without credentials = %s", got)
	}
}
