// Package terraform holds the Go side of infra/terraform's offline checks:
// the config file the module writes on every broker is rendered by OpenTofu
// itself (the module's modules/broker-config, as the brokers get it) and
// loaded by the server built from this tree, so that the template cannot
// drift from the server's flags.
//
// It needs ./bin/tofu (`make tofu`); `make test` builds it first.
package terraform

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tofu is ./bin/tofu, or a skip (a failure under CI) when it is missing.
func tofu(t *testing.T) string {
	t.Helper()
	path, err := filepath.Abs("../../bin/tofu")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing: `make tofu` builds it (make test does)", path)
		}
		t.Skipf("%s missing: `make tofu` builds it", path)
	}
	return path
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// renderConfigs renders modules/broker-config for three brokers of each
// protocol, through `tofu apply` of a root with no provider (nothing is
// created), and returns the files by "<protocol>-<node id>".
func renderConfigs(t *testing.T, etcDir, dataDir string) map[string]string {
	t.Helper()
	module, err := filepath.Abs("modules/broker-config")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	main := fmt.Sprintf(`
locals {
  protocols = ["SASL_SSL", "SSL", "SASL_PLAINTEXT", "PLAINTEXT"]
  brokers = {
    for pair in setproduct(local.protocols, [1, 2, 3]) : "${pair[0]}-${pair[1]}" => { protocol = pair[0], id = pair[1] }
  }
}

module "config" {
  source     = %q
  for_each   = local.brokers
  node_id    = each.value.id
  rack       = "eu-west-1${substr("abc", each.value.id - 1, 1)}"
  host       = "10.0.${each.value.id}.10"
  ports      = { kafka = 9092, replication = 9094, raft = 9093, admin = 9644 }
  protocol   = each.value.protocol
  meta_peers = "1=10.0.1.10:9093,2=10.0.2.10:9093,3=10.0.3.10:9093"
  bucket_url = "s3://orders-tiered/strata?region=eu-west-1&sse=aws:kms&sse_kms_key_id=${urlencode("arn:aws:kms:eu-west-1:123456789012:key/0b1c2d3e-0000-4000-8000-000000000001")}&sse_bucket_key=true"
  admin_token = true
  extra       = { "num.partitions" = "6" }
  data_dir    = "%s/${each.key}"
  etc_dir     = %q
}

output "configs" {
  value = { for k, m in module.config : k => m.config }
}
`, module, dataDir, etcDir)
	if err := os.WriteFile(filepath.Join(root, "main.tf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	cliConfig := filepath.Join(root, "tofurc")
	if err := os.WriteFile(cliConfig, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"TF_CLI_CONFIG_FILE=" + cliConfig, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1"}
	bin := tofu(t)
	run(t, root, env, bin, "init", "-input=false", "-no-color")
	run(t, root, env, bin, "apply", "-auto-approve", "-input=false", "-no-color")
	out := run(t, root, env, bin, "output", "-json", "configs")
	var configs map[string]string
	if err := json.Unmarshal([]byte(out), &configs); err != nil {
		t.Fatalf("tofu output: %v\n%s", err, out)
	}
	if len(configs) != 12 {
		t.Fatalf("rendered %d configs, want 12", len(configs))
	}
	return configs
}

// writeSecrets lays out what the user data fetches from Secrets Manager.
func writeSecrets(t *testing.T, etcDir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "strata-test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	files := map[string][]byte{
		"tls/broker.pem":             append(keyPEM, certPEM...),
		"tls/ca.pem":                 certPEM,
		"sasl/inter-broker.password": []byte("correct horse battery staple\n"),
		"admin.token":                []byte("0123456789abcdef0123456789abcdef\n"),
	}
	for name, data := range files {
		path := filepath.Join(etcDir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// serverFlags are the names `strata server -h` lists.
func serverFlags(t *testing.T, strata string) map[string]bool {
	t.Helper()
	out, _ := exec.Command(strata, "server", "-h").CombinedOutput()
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z0-9.-]+)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if len(flags) < 20 {
		t.Fatalf("strata server -h listed %d flags:\n%s", len(flags), out)
	}
	return flags
}

func TestBrokerConfigLoads(t *testing.T) {
	if testing.Short() {
		t.Skip("builds strata and runs tofu")
	}
	tofu(t)
	work := t.TempDir()
	strata := filepath.Join(work, "strata")
	cmd := exec.Command("go", "build", "-o", strata, "github.com/stratalog/strata/cmd/strata")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	etcDir := filepath.Join(work, "etc")
	dataDir := filepath.Join(work, "data")
	writeSecrets(t, etcDir)
	configs := renderConfigs(t, etcDir, dataDir)
	flags := serverFlags(t, strata)

	for name, text := range configs {
		// Every name the template writes is one of the server's flags,
		// whether or not this server can --check.
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			key, _, ok := strings.Cut(line, "=")
			if !ok || !flags[strings.TrimSpace(key)] {
				t.Errorf("%s: %q is not a `strata server` flag", name, line)
			}
		}
	}
	if !flags["check"] {
		t.Skip("strata server has no --check yet: names checked, values not loaded")
	}
	for name, text := range configs {
		path := filepath.Join(work, name+".conf")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dataDir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(strata, "server", "--config", path, "--check").CombinedOutput()
		if err != nil {
			t.Errorf("%s: strata server --config --check: %v\n%s\n--- %s\n%s", name, err, out, path, text)
		}
	}
}
