# strata's build. `make test` is the one command CI runs: it fetches the
# tools it needs into ./bin, lints, and runs every test with the race
# detector.

GO          ?= go
BIN         := $(CURDIR)/bin
STATICCHECK := $(BIN)/staticcheck
STATICCHECK_VERSION := v0.8.2
PKGS        := ./...
FUZZTIME    ?= 10s
BENCHTIME   ?= 1s

export PATH := $(BIN):$(PATH)

.PHONY: all build test test-short test-deps lint fuzz bench tools clean

all: build test

## build: the strata binary into ./bin
build:
	$(GO) build -o $(BIN)/strata ./cmd/strata

## release: static linux/amd64 and linux/arm64 binaries into dist/, stamped
## with VERSION (default: git describe) and the git revision, and dist/SHA256SUMS
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
.PHONY: release
release:
	@set -e; v='$(VERSION)'; rm -rf dist; mkdir -p dist; \
	for arch in amd64 arm64; do \
	  echo ">> dist/strata-$$v-linux-$$arch"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -buildvcs=auto \
	    -ldflags "-s -w -X main.version=$$v" -o dist/strata-$$v-linux-$$arch ./cmd/strata; \
	done; \
	cd dist && sha256sum strata-$$v-linux-* > SHA256SUMS && cat SHA256SUMS

## test: lint, then every test with -race (what CI runs)
test: lint rules test-deps tofu-test
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

## test-deps: what the tests talk to (kcat, kafkajs, versitygw), installed when missing
test-deps:
	@scripts/test-deps

## test-short: the tests without the race detector, for a quick loop (and
## the alerting rules, if promtool is already in ./bin); installs what the
## tests talk to, as make test does
test-short: test-deps
	@if [ -x $(PROMTOOL) ]; then $(MAKE) --no-print-directory rules; \
	  else echo ">> skipping the alerting rules: no $(PROMTOOL) (make rules installs it, a build of minutes)"; fi
	$(GO) test -count=1 -short -timeout 15m $(PKGS)

## lint: gofmt, go vet, staticcheck
lint: $(STATICCHECK)
	@echo ">> gofmt"
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@echo ">> go vet"
	@$(GO) vet $(PKGS)
	@echo ">> staticcheck"
	@$(STATICCHECK) $(PKGS)

## rules: the alerting rules in infra/prometheus checked and unit-tested
## (promtool check rules, promtool test rules)
PROMTOOL         := $(BIN)/promtool
PROMTOOL_VERSION := v0.316.0
.PHONY: rules
rules: $(PROMTOOL)
	@echo ">> promtool check rules"
	@$(PROMTOOL) check rules infra/prometheus/alerts.yml
	@echo ">> promtool test rules"
	@$(PROMTOOL) test rules infra/prometheus/alerts_test.yml

# promtool of Prometheus v3.16.0 (module version v0.316.0), built with
# Prometheus's remove_all_sd tag: checking and testing rules needs no
# service discovery, and leaving out the Kubernetes and cloud SDKs it would
# link halves the build: from empty caches about 4.5 minutes on 2 cores
# (3.5 of them compiling, 1.1 GB of memory) against about 7 (3.3 GB).
$(PROMTOOL):
	@echo ">> installing promtool $(PROMTOOL_VERSION) into $(BIN) (Go module proxy)"
	@GOBIN=$(BIN) $(GO) install -tags remove_all_sd github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION)

## fuzz: a short run of every fuzz target (FUZZTIME each, default 10s)
fuzz:
	@scripts/fuzz-all $(FUZZTIME)

## bench: every benchmark, each figure printed beside the limit measured in the same run
bench:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -timeout 240m $(PKGS)

tools: $(STATICCHECK)

## tofu-test: infra/terraform checked offline: tofu fmt -check, init, validate
## and test (mock_provider) against the stand-in AWS provider; the Go side
## (config_test.go) runs with the other tests
TOFU_VERSION   := v1.10.10
TOFU           := $(BIN)/tofu
TOFU_PLATFORM  := $(shell $(GO) env GOOS)_$(shell $(GO) env GOARCH)
TOFU_AWS       := 6.66.0
TOFU_MIRROR    := $(BIN)/tofu-mirror
TOFU_STANDIN   := $(TOFU_MIRROR)/registry.opentofu.org/hashicorp/aws/$(TOFU_AWS)/$(TOFU_PLATFORM)/terraform-provider-aws_v$(TOFU_AWS)
TOFU_RC        := $(BIN)/tofurc
TOFU_ENV       := TF_CLI_CONFIG_FILE=$(TOFU_RC) CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1
.PHONY: tofu tofu-test
tofu: $(TOFU) $(TOFU_STANDIN) $(TOFU_RC)

tofu-test: tofu
	@echo ">> tofu fmt -check"
	@$(TOFU_ENV) $(TOFU) fmt -check -recursive infra/terraform
	@for dir in infra/terraform infra/terraform/examples/three-az; do \
	  echo ">> tofu init + validate: $$dir"; \
	  (cd $$dir && rm -f .terraform.lock.hcl && $(TOFU_ENV) $(TOFU) init -backend=false -input=false -no-color >/dev/null \
	    && $(TOFU_ENV) $(TOFU) validate -no-color) || exit 1; \
	done
	@echo ">> tofu test: infra/terraform"
	@cd infra/terraform && $(TOFU_ENV) $(TOFU) test -no-color

# OpenTofu's go.mod has a replace directive, so `go install tofu@version`
# refuses it: build it from a copy of the module the proxy serves.
$(TOFU):
	@echo ">> building OpenTofu $(TOFU_VERSION) into $(BIN) (Go module proxy)"
	@set -e; tmp=$$(mktemp -d); trap 'chmod -R u+w "$$tmp"; rm -rf "$$tmp"' EXIT; cd "$$tmp"; \
	  dir=$$($(GO) mod download -json github.com/opentofu/opentofu@$(TOFU_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	  cp -R "$$dir" src; chmod -R u+w src; cd src && GOFLAGS=-mod=mod $(GO) build -trimpath -o $(TOFU) ./cmd/tofu

# The AWS provider cannot be downloaded here: a schema-only stand-in
# (infra/terraform/standin, its own module) in a filesystem mirror.
$(TOFU_STANDIN): infra/terraform/standin/main.go infra/terraform/standin/schema.json infra/terraform/standin/go.mod infra/terraform/standin/go.sum
	@echo ">> building the stand-in AWS provider $(TOFU_AWS) into $(TOFU_MIRROR)"
	@mkdir -p $(dir $@)
	@cd infra/terraform/standin && $(GO) build -trimpath -o $@ .

$(TOFU_RC):
	@mkdir -p $(BIN)
	@printf 'provider_installation {\n  filesystem_mirror {\n    path    = "%s"\n    include = ["registry.opentofu.org/hashicorp/aws"]\n  }\n}\n' $(TOFU_MIRROR) > $@

$(STATICCHECK):
	@echo ">> installing staticcheck $(STATICCHECK_VERSION) into $(BIN) (Go module proxy)"
	@GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

clean:
	rm -rf $(BIN)
