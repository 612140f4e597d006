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

## test: lint, then every test with -race (what CI runs)
test: lint test-deps
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

## test-deps: what the tests talk to (kcat, kafkajs, versitygw), installed when missing
test-deps:
	@scripts/test-deps

## test-short: the tests without the race detector, for a quick loop
test-short:
	$(GO) test -count=1 -short $(PKGS)

## lint: gofmt, go vet, staticcheck
lint: $(STATICCHECK)
	@echo ">> gofmt"
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@echo ">> go vet"
	@$(GO) vet $(PKGS)
	@echo ">> staticcheck"
	@$(STATICCHECK) $(PKGS)

## fuzz: a short run of every fuzz target (FUZZTIME each, default 10s)
fuzz:
	@scripts/fuzz-all $(FUZZTIME)

## bench: every benchmark, each figure printed beside the limit measured in the same run
bench:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -timeout 60m $(PKGS)

tools: $(STATICCHECK)

$(STATICCHECK):
	@echo ">> installing staticcheck $(STATICCHECK_VERSION) into $(BIN) (Go module proxy)"
	@GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

clean:
	rm -rf $(BIN)
