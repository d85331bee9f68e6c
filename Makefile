# tenantguard — run `make help` for the targets.

SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

# Pinned tools, installed into ./bin with `go install` (no other downloads).
OPA_VERSION           ?= v1.22.2
GOLANGCI_LINT_VERSION ?= v2.15.0
HELM_VERSION          ?= v4.3.1
REGO_COVERAGE         ?= 90
# LOAD_FLAGS are extra flags for `tgload run` (make bench), e.g. -duration 5s
LOAD_FLAGS            ?=
# BENCH_MEMORY_LIMIT is tenantguard's soft memory limit under `make bench`
# (serve --memory-limit, the chart's memoryLimit): it caps the Go heap and
# leaves room for the binary and stacks, so that the RSS stays under 150 MiB
# even past saturation, as in a pod with limits.memory 160Mi; 0 for none
BENCH_MEMORY_LIMIT    ?= 105Mi
SOAK_FLAGS            ?=
# AUDIT_LOAD_FLAGS are extra flags for `tgload audit-load` (make bench-audit),
# e.g. -duration 2m, or -note 'The machine was shared.' for BENCHMARKS.md
AUDIT_LOAD_FLAGS      ?=
SOAK_SHORT_FLAGS      ?=
# BASE is the git revision `make bench-compare` measures the working tree
# against: 8892a25 or later, whose `tgload serve` takes -memory-limit (its
# tgload is built in tests/load's own module if it has one, else in the root's);
# COMPARE_FLAGS are extra flags for `tgload compare`, e.g. -rate 2000 to
# compare latency at that open-loop rate instead of saturated throughput
BASE                  ?= HEAD
COMPARE_FLAGS         ?=
# Fuzz budgets are counts of executions, about 5 s each here; FUZZ_SCALE
# multiplies them. A duration (-fuzztime 5s) races Go's fuzz coordinator at its
# deadline and fails with a bare "context deadline exceeded" on a busy machine
# (golang/go#75804, fixed in Go 1.27); a count has no deadline to race.
FUZZ_SCALE            ?= 6
FUZZ_TARGETS          := webhook/admission:FuzzDecode:70000 \
                         webhook/admission:FuzzDecodeReadsTheRequestAsEncodingJSON:40000 \
                         webhook/admission:FuzzEncodeWritesWhatEncodingJSONWrites:60000 \
                         internal/registry:FuzzParse:100000 \
                         webhook:FuzzHandler:16000 \
                         internal/engine:FuzzAdmit:8000 \
                         internal/engine:FuzzThePlanEvaluatorDecidesAsTopdown:8000 \
                         internal/jsonast:FuzzParseDecodesAsEncodingJSON:80000

# The local control plane for e2e tests and the demo, built from the Go module
# proxy (tests/tools/*): a few minutes the first time, then cached.
KUBE_VERSION          ?= v1.37.1
KYVERNO_VERSION       ?= v1.19.1
# The Gateway API's standard-channel CRDs (Gateway, HTTPRoute, GRPCRoute,
# TLSRoute ...), installed into every test control plane; v1.7.0 needs a
# newer Go
GATEWAY_API_VERSION   ?= v1.6.3
# The experimental XListenerSet (gateway.networking.x-k8s.io), which the
# standard ListenerSet replaced in v1.5, installed beside them: the last
# release that has it
GATEWAY_API_X_VERSION ?= v1.4.1
# The policy report CRDs the chart installs for the background audit, from
# their Go modules: openreports.io (the default format) and wgpolicyk8s.io
# (Kyverno's module, KYVERNO_VERSION).
OPENREPORTS_VERSION   ?= v0.2.1
REPORT_CRDS           := charts/tenantguard/files/crds

BIN      := $(CURDIR)/bin
CP_BIN   := $(CURDIR)/tests/tools/bin
OPA      := $(BIN)/opa
LINT     := $(BIN)/golangci-lint
HELM     := $(BIN)/helm
BENCH_OUT := $(CURDIR)/bench-out
# The load harness, tgload, is its own Go module (tests/load/go.mod), so that
# its plotting and histogram libraries stay out of the product's go.mod; it
# imports this tree's packages through a replace directive. `go test ./...`,
# `go vet ./...` and `golangci-lint run ./...` at the root leave it out, so
# the targets below run them in LOAD_MOD as well.
LOAD_MOD := tests/load
TGLOAD   := $(BENCH_OUT)/tgload
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X github.com/tenantguard/tenantguard/internal/cli.Version=$(VERSION)
# TEST_LDFLAGS link the test binaries make test runs without DWARF and the
# symbol table: go test links them again on every run (it caches packages, not
# test binaries), and test-race's 27 links then take 94 s of CPU instead of
# 136. Stack traces and race reports still name functions and lines: they
# read the runtime's own tables, which stay.
TEST_LDFLAGS := -s -w

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/tenantguard
	CGO_ENABLED=0 go build -buildvcs=auto -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/tenantguard ./cmd/tenantguard

IMAGE ?= tenantguard:$(VERSION)

.PHONY: image
image: ## Build the container image (needs a Docker engine; none runs on the dev machines)
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE) .

.PHONY: run
run: control-plane ## Run the main job: a local kube-apiserver + etcd, tenantguard serve, live allow/deny decisions
	go run ./tests/demo

.PHONY: demo
demo: run ## Same as run; `go run ./tests/demo -hold` keeps it running for kubectl

.PHONY: review-examples
review-examples: build ## Offline decisions (tenantguard review) on examples/requests and examples/manifests
	@for r in examples/requests/*.yaml; do \
	  echo "== $$r"; sed -n 's/^# /   /p' "$$r"; \
	  $(BIN)/tenantguard review -o text --registry examples/registry.yaml --objects examples/cluster.yaml "$$r"; \
	  echo "   (exit $$?)"; \
	done
	@for m in examples/manifests/*.yaml; do \
	  echo "== $$m, as alice"; \
	  $(BIN)/tenantguard review -o text --registry examples/registry.yaml --objects examples/cluster.yaml -f "$$m" --as alice; \
	  echo "   (exit $$?)"; \
	done

.PHONY: generate
generate: ## Regenerate what the rule library's METADATA gives: policies/ (the exports for examples/registry.yaml), docs/rules.md and the chart's webhook rules
	go run ./cmd/tenantguard rules -o markdown > docs/rules.md
	go run ./cmd/tenantguard rules -o webhook-rules > charts/tenantguard/files/webhook-rules.yaml
	go run ./cmd/tenantguard export bundle --registry examples/registry.yaml -o policies/bundle
	go run ./cmd/tenantguard export gatekeeper --registry examples/registry.yaml -o policies/gatekeeper > /dev/null
	go run ./cmd/tenantguard export kyverno --registry examples/registry.yaml -o policies/kyverno > /dev/null
	go run ./cmd/tenantguard export vap --registry examples/registry.yaml -o policies/vap > /dev/null

.PHONY: test
test: lint test-rego test-go ## Run every test: lint (Go and Rego), opa test with coverage, Go tests and short fuzzing

.PHONY: test-go
test-go: control-plane kyverno-crds gateway-crds build $(HELM) ## Run the Go tests (with the race detector, but for ./tests: test-race, test-engines, test-load; e2e on the real API server), short fuzz runs, every benchmark once and the short soak
	go vet ./...
	go -C $(LOAD_MOD) vet ./...
	$(MAKE) -j2 --output-sync=line test-race test-engines
	$(MAKE) test-load
	$(MAKE) -j3 --output-sync=target soak-short fuzz-short bench-smoke

# soak-short holds 500 requests/s for 2 minutes, half a core or so: the
# short fuzzing and bench-smoke run beside it (-j3, so that each starts at
# once), each target's output printed whole when it ends. None of the three
# asserts a time. test-load runs alone: its audit test needs an audit to
# finish within the audited target's turns, which it did not beside
# tests/e2e and ./tests. The race phase keeps both cores busy: moving
# soak-short beside it (test-engines, then soak-short) only made tests/e2e
# longer (make test 12m54s and 13m42s, against 13m36s this way, the same
# day).

.PHONY: test-load
test-load: ## The load harness's tests (tests/load, a module of its own) with the race detector
	go -C $(LOAD_MOD) test -race -count=1 -ldflags='$(TEST_LDFLAGS)' ./...

.PHONY: test-race
test-race: ## The root module's Go tests with the race detector, all but ./tests (test-engines)
	go test -race -count=1 -ldflags='$(TEST_LDFLAGS)' $(RACE_PACKAGES)

.PHONY: test-engines
test-engines: ## ./tests: the exported library through OPA, Gatekeeper, Kyverno and a real API server's admission policies, the chart; without the race detector
	go test -count=1 -ldflags='$(TEST_LDFLAGS)' ./tests/

# RACE_PACKAGES are the root module's packages but ./tests, tests/e2e first.
# ./tests starts no goroutine of its own: its time goes to other projects'
# policy engines, which the race detector slows down (317 s with it in make
# test, beside tests/e2e; 105 s without, alone), while the tenantguard code
# it calls is raced in its own packages. go test starts packages in the
# order given, two at a time: tests/e2e, the longest (280 to 465 s), first,
# so that the others run beside it instead of before it.
MODULE        = $(shell go list -m)
# PACKAGES are the root module's packages (not the copies bench-compare
# makes under $(BENCH_OUT), nor tests/load, which are modules of their own)
PACKAGES      = $(shell go list ./...)
RACE_PACKAGES = $(MODULE)/tests/e2e $(filter-out $(MODULE)/tests $(MODULE)/tests/e2e,$(PACKAGES))

.PHONY: fuzz-short
fuzz-short: ## The fuzzing `make test` runs: every fuzz target for its budget of executions (FUZZ_SCALE=1, about 5 s each)
	$(MAKE) fuzz FUZZ_SCALE=1

.PHONY: bench-smoke
bench-smoke: ## Run every Go benchmark once, on the smaller fixtures of -short, so that one that no longer runs fails the tests (its figures are not kept)
	go test -run '^$$' -bench . -benchtime 1x -short -ldflags='$(TEST_LDFLAGS)' $(BENCH_PACKAGES)
	go -C $(LOAD_MOD) test -run '^$$' -bench . -benchtime 1x -short -ldflags='$(TEST_LDFLAGS)' ./...

# BENCH_PACKAGES are the root module's packages with a benchmark, as
# ./paths: go test links a test binary for every package it is given, with
# benchmarks or not
BENCH_PACKAGES = $(foreach d,$(patsubst $(MODULE)%,.%,$(PACKAGES)),$(if $(shell grep -ls '^func Benchmark' $(d)/*_test.go),$(d)/))

.PHONY: test-rego
test-rego: $(OPA) ## Test the Rego library with the real opa CLI (coverage >= REGO_COVERAGE%)
	$(OPA) test rego/ --count=1
	@$(OPA) test rego/ --coverage --threshold $(REGO_COVERAGE) > $(BIN)/rego-coverage.json || { \
	  echo "Rego coverage below $(REGO_COVERAGE)%"; exit 1; }
	@printf 'Rego coverage: %s%%\n' "$$(sed -n 's/^  "coverage": \([0-9.]*\).*/\1/p' $(BIN)/rego-coverage.json | tail -1)"

.PHONY: fuzz
fuzz: ## Run every fuzz target for its budget of executions times FUZZ_SCALE (default 6, about 30 s each)
	@set -e; for target in $(FUZZ_TARGETS); do \
	  pkg=$${target%%:*}; rest=$${target#*:}; name=$${rest%%:*}; runs=$$(( $${rest#*:} * $(FUZZ_SCALE) )); \
	  grep -qs "^func $$name(" $$pkg/*_test.go || { echo "no fuzz target $$name in $$pkg"; exit 1; }; \
	  echo "go test ./$$pkg/ -run '^\$$' -fuzz '^$$name\$$' -fuzztime $${runs}x -ldflags='$(TEST_LDFLAGS)'"; \
	  go test ./$$pkg/ -run '^$$' -fuzz "^$$name\$$" -fuzztime "$${runs}x" -ldflags='$(TEST_LDFLAGS)'; \
	done

.PHONY: bench
bench: control-plane gateway-crds $(OPA) tgload ## Run the Go benchmarks and the side-by-side load comparison; print the targets table, rewrite BENCHMARKS.md's generated section and docs/bench/latency.png
	@mkdir -p $(BENCH_OUT) docs/bench
	go test -run '^$$' -bench . -benchmem -count 5 ./internal/engine/ | tee $(BENCH_OUT)/engine.txt
	go test -run '^$$' -bench . -benchmem -count 5 ./webhook/admission/ | tee $(BENCH_OUT)/admission.txt
	go test -run '^$$' -bench . -benchmem -count 3 -benchtime 20000x ./webhook/ | tee $(BENCH_OUT)/server.txt
	go test -run '^$$' -bench . -benchmem -count 3 ./generator/ | tee $(BENCH_OUT)/generator.txt
	go test -run '^$$' -bench SideBySide -benchmem -count 3 ./tests/ | tee $(BENCH_OUT)/sidebyside.txt
	go test -run '^$$' -bench Reconcile -benchtime 1x ./tests/e2e/ | tee $(BENCH_OUT)/reconcile.txt
	go test -run '^$$' -bench CreateEndToEnd -benchtime 500x -count 3 ./tests/e2e/ | tee $(BENCH_OUT)/endtoend.txt
	$(TGLOAD) run -opa $(OPA) -memory-limit $(BENCH_MEMORY_LIMIT) $(LOAD_FLAGS) \
	  -micro $$(ls $(BENCH_OUT)/*.txt | paste -sd, -) -json $(BENCH_OUT)/load.json \
	  -benchmarks BENCHMARKS.md -plot docs/bench/latency.png -profile-dir $(BENCH_OUT)

.PHONY: bench-load
bench-load: $(OPA) tgload ## Only the load comparison (tgload run), with the Go benchmarks' last outputs in $(BENCH_OUT) if any
	@mkdir -p $(BENCH_OUT) docs/bench
	$(TGLOAD) run -opa $(OPA) -memory-limit $(BENCH_MEMORY_LIMIT) $(LOAD_FLAGS) -json $(BENCH_OUT)/load.json -profile-dir $(BENCH_OUT) \
	  $$(ls $(BENCH_OUT)/*.txt >/dev/null 2>&1 && echo -micro $$(ls $(BENCH_OUT)/*.txt | paste -sd, -))

.PHONY: bench-instructions
bench-instructions: ## Count the CPU instructions of a decision on the mixed corpus (valgrind's callgrind, GOGC=off: within 0.2% from run to run, for comparing small changes on this noisy machine); needs valgrind (apt-get install valgrind)
	@mkdir -p $(BENCH_OUT)
	go test -c -o $(BENCH_OUT)/engine.test ./internal/engine/
	GOGC=off GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind \
	  --callgrind-out-file=$(BENCH_OUT)/callgrind.validate '--toggle-collect=*engine.(*Engine).validate' \
	  $(BENCH_OUT)/engine.test -test.run '^$$' -test.bench 'BenchmarkValidateCorpus/plan$$' -test.benchtime 2000x 2>&1 \
	  | awk '/Collected/ {printf "%.0f instructions a decision (2,001 decisions; callgrind_annotate $(BENCH_OUT)/callgrind.validate)\n", $$4/2001}'

.PHONY: bench-compare
bench-compare: tgload ## Compare tenantguard at BASE (a git revision, default HEAD) with the working tree and the null webhook, saturated (or open-loop with COMPARE_FLAGS=-rate N) in turns (tgload compare)
	@rm -rf $(BENCH_OUT)/base-src && mkdir -p $(BENCH_OUT)/base-src
	git archive $(BASE) | tar -x -C $(BENCH_OUT)/base-src
	if [ -f $(BENCH_OUT)/base-src/$(LOAD_MOD)/go.mod ]; then \
	  go -C $(BENCH_OUT)/base-src/$(LOAD_MOD) build -o $(BENCH_OUT)/tgload-base ./cmd/tgload; \
	else \
	  go -C $(BENCH_OUT)/base-src build -o $(BENCH_OUT)/tgload-base ./$(LOAD_MOD)/cmd/tgload; \
	fi; status=$$?; rm -rf $(BENCH_OUT)/base-src; exit $$status
	$(TGLOAD) compare -memory-limit $(BENCH_MEMORY_LIMIT) $(COMPARE_FLAGS) \
	  -build base=tenantguard@$(BENCH_OUT)/tgload-base -build new=tenantguard -build null=null

.PHONY: bench-audit
bench-audit: tgload ## Admission at 2,000 requests/s open-loop while tenantguard audits the scale cluster (100,000 pods) in the background, in turns with the null webhook and tenantguard without the audit, the servers run as the chart runs them; print p99 against the null webhook's and the audits' duration and peak memory, rewrite BENCHMARKS.md's bench-audit section (tgload audit-load)
	@mkdir -p $(BENCH_OUT)
	$(TGLOAD) audit-load -json $(BENCH_OUT)/audit-load.json -benchmarks BENCHMARKS.md $(AUDIT_LOAD_FLAGS)

.PHONY: soak
soak: tgload ## Reliability soak: 10 minutes at 1,000 requests/s with a registry reload every 10 s, the server run as the chart runs it (fails on an error, a wrong decision, RSS growth over 10% or live heap growth over 10%)
	@mkdir -p $(BENCH_OUT)
	$(TGLOAD) soak -json $(BENCH_OUT)/soak.json $(SOAK_FLAGS)

.PHONY: soak-short
soak-short: tgload ## The soak `make test` runs: 2 minutes at 500 requests/s with a registry reload every second (more reloads than `make soak`); fails on an error, a wrong decision or live heap growth over 10%
	@mkdir -p $(BENCH_OUT)
	$(TGLOAD) soak -duration 2m -window 10s -warmup 15s -rate 500 -reload 1s -max-growth 10 \
	  -json $(BENCH_OUT)/soak-short.json $(SOAK_SHORT_FLAGS)

.PHONY: tgload
tgload: ## Build the load harness into $(BENCH_OUT)/tgload (from its own module, tests/load)
	go -C $(LOAD_MOD) build -o $(TGLOAD) ./cmd/tgload

.PHONY: control-plane
control-plane: $(CP_BIN)/kube-apiserver $(CP_BIN)/etcd ## Build kube-apiserver and etcd into tests/tools/bin (cached)

$(CP_BIN)/kube-apiserver: tests/tools/kube-apiserver/go.mod tests/tools/kube-apiserver/main.go
	cd tests/tools/kube-apiserver && go build -trimpath -o $@ \
	  -ldflags '-s -w -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37' .

.PHONY: kyverno-crds
kyverno-crds: $(CP_BIN)/crds/kyverno-validatingpolicies.yaml ## Fetch Kyverno's ValidatingPolicy CRD from its Go module (pinned) into tests/tools/bin/crds

$(CP_BIN)/crds/kyverno-validatingpolicies.yaml:
	@mkdir -p $(@D)
	dir="$$(go mod download -json github.com/kyverno/kyverno@$(KYVERNO_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p')" && \
	  cp "$$dir/config/crds/policies.kyverno.io/policies.kyverno.io_validatingpolicies.yaml" $@ && chmod u+w $@

.PHONY: gateway-crds
gateway-crds: $(CP_BIN)/crds/gateway-api/.version ## Fetch the Gateway API's standard-channel CRDs, and the experimental XListenerSet of v1.4 (which tenantguard judges too), from its Go module (pinned) into tests/tools/bin/crds/gateway-api

$(CP_BIN)/crds/gateway-api/.version: Makefile
	@rm -rf $(@D) && mkdir -p $(@D)
	dir="$$(go mod download -json sigs.k8s.io/gateway-api@$(GATEWAY_API_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p')" && \
	  cp "$$dir"/config/crd/standard/gateway.networking.k8s.io_*.yaml $(@D)/ && rm -f $(@D)/*_vap_*.yaml
	dir="$$(go mod download -json sigs.k8s.io/gateway-api@$(GATEWAY_API_X_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p')" && \
	  cp "$$dir"/config/crd/experimental/gateway.networking.x-k8s.io_xlistenersets.yaml $(@D)/ && chmod u+w $(@D)/*.yaml
	echo $(GATEWAY_API_VERSION) $(GATEWAY_API_X_VERSION) > $@

.PHONY: report-crds
report-crds: ## Fetch the policy report CRDs (openreports.io, wgpolicyk8s.io) from their Go modules (pinned) into the chart's files/crds, which the chart and the e2e tests install
	@mkdir -p $(REPORT_CRDS)
	dir="$$(go mod download -json github.com/openreports/reports-api@$(OPENREPORTS_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p')" && \
	  for f in reports clusterreports; do cp "$$dir/config/crd/openreports.io_$$f.yaml" $(REPORT_CRDS)/ && chmod u+w $(REPORT_CRDS)/openreports.io_$$f.yaml; done
	dir="$$(go mod download -json github.com/kyverno/kyverno@$(KYVERNO_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p')" && \
	  for f in policyreports clusterpolicyreports; do cp "$$dir/config/crds/policyreport/wgpolicyk8s.io_$$f.yaml" $(REPORT_CRDS)/ && chmod u+w $(REPORT_CRDS)/wgpolicyk8s.io_$$f.yaml; done

$(CP_BIN)/etcd: tests/tools/etcd/go.mod tests/tools/etcd/main.go
	cd tests/tools/etcd && go build -trimpath -ldflags '-s -w' -o $@ .

.PHONY: lint
lint: $(LINT) $(OPA) ## Lint Go (golangci-lint) and Rego (opa fmt, opa check --strict)
	$(LINT) run ./...
	cd $(LOAD_MOD) && $(LINT) run ./...
	@test -z "$$($(OPA) fmt --list rego/)" || { echo "opa fmt would change:"; $(OPA) fmt --list rego/; exit 1; }
	$(OPA) check --strict rego/

.PHONY: fmt
fmt: $(OPA) ## Format Go and Rego sources
	gofmt -w $$(git ls-files '*.go')
	$(OPA) fmt -w rego/

.PHONY: tools
tools: $(OPA) $(LINT) $(HELM) ## Install the pinned tools into ./bin

$(OPA):
	GOBIN=$(BIN) go install github.com/open-policy-agent/opa@$(OPA_VERSION)

$(LINT):
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

$(HELM):
	GOBIN=$(BIN) go install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)

.PHONY: clean
clean: ## Remove build outputs, installed tools and the control-plane binaries
	rm -rf $(BIN) $(CP_BIN) $(BENCH_OUT)
