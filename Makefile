# tenantguard — run `make help` for the targets.

SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

# Pinned tools, installed into ./bin with `go install` (no other downloads).
OPA_VERSION           ?= v1.22.2
GOLANGCI_LINT_VERSION ?= v2.15.0
REGO_COVERAGE         ?= 90
FUZZTIME              ?= 30s

BIN      := $(CURDIR)/bin
OPA      := $(BIN)/opa
LINT     := $(BIN)/golangci-lint
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X github.com/tenantguard/tenantguard/internal/cli.Version=$(VERSION)

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/tenantguard
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/tenantguard ./cmd/tenantguard

.PHONY: run
run: build ## Run the main job: live allow/deny decisions on the example registry and cluster
	@for r in examples/requests/*.yaml; do \
	  echo "== $$r"; sed -n 's/^# /   /p' "$$r"; \
	  $(BIN)/tenantguard review -o text --registry examples/registry.yaml --objects examples/cluster.yaml "$$r"; \
	  echo "   (exit $$?)"; \
	done

.PHONY: test
test: lint test-rego test-go ## Run every test: lint (Go and Rego), opa test with coverage, Go tests and short fuzzing

.PHONY: test-go
test-go: ## Run the Go tests (with the race detector) and short fuzz runs
	go vet ./...
	go test -race -count=1 ./...
	$(MAKE) fuzz FUZZTIME=5s

.PHONY: test-rego
test-rego: $(OPA) ## Test the Rego library with the real opa CLI (coverage >= REGO_COVERAGE%)
	$(OPA) test rego/ --count=1
	@$(OPA) test rego/ --coverage --threshold $(REGO_COVERAGE) > $(BIN)/rego-coverage.json || { \
	  echo "Rego coverage below $(REGO_COVERAGE)%"; exit 1; }
	@printf 'Rego coverage: %s%%\n' "$$(sed -n 's/^  "coverage": \([0-9.]*\).*/\1/p' $(BIN)/rego-coverage.json | tail -1)"

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 30s)
	go test ./internal/admission/ -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	go test ./internal/registry/ -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)

.PHONY: bench
bench: ## Run the Go benchmarks (figures go to BENCHMARKS.md)
	go test -run '^$$' -bench . -benchmem -count 5 ./internal/engine/

.PHONY: lint
lint: $(LINT) $(OPA) ## Lint Go (golangci-lint) and Rego (opa fmt, opa check --strict)
	$(LINT) run ./...
	@test -z "$$($(OPA) fmt --list rego/)" || { echo "opa fmt would change:"; $(OPA) fmt --list rego/; exit 1; }
	$(OPA) check --strict rego/

.PHONY: fmt
fmt: $(OPA) ## Format Go and Rego sources
	gofmt -w $$(git ls-files '*.go')
	$(OPA) fmt -w rego/

.PHONY: tools
tools: $(OPA) $(LINT) ## Install the pinned tools into ./bin

$(OPA):
	GOBIN=$(BIN) go install github.com/open-policy-agent/opa@$(OPA_VERSION)

$(LINT):
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

.PHONY: clean
clean: ## Remove build outputs and installed tools
	rm -rf $(BIN)
