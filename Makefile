# make dev  - build the Worker and serve it on http://127.0.0.1:$(PORT):
#             KV mode; ENV=ledger for the Durable Object ledger
# make test - vet, unit tests, and end-to-end tests against `wrangler dev`
# make unit - vet and the native unit tests only, in seconds
# make bench - load benchmark against wrangler dev (not part of make test)
# make profile - CPU profile of the Go Worker under load, by function
# make mutants - planted bugs, each of which the tests must catch
# make tinygo - install the pinned TinyGo (Debian-like systems): builds then use it
# make deploy ENV=... - check and deploy an environment with TinyGo (DRY=1: print only)
# make smoke URL=... TOKEN=... - place, replay and look up an order at a Worker
SHELL := /bin/bash
PORT ?= 8787
# COMPILER is auto (the pinned TinyGo where installed, else standard Go,
# saying so), tinygo or go: see build.sh. wrangler's build inherits it, and the tests
# build their wasm test binaries with what built the Worker.
export COMPILER ?= auto
# ENV is a wrangler environment of wrangler.toml: empty (KV mode), ledger,
# or ledger-front (start ENV=ledger first, then this on another PORT).
ENV ?=
# wrangler needs Node.js >= 22; package.json installs one into node_modules/.bin.
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
export WRANGLER_SEND_METRICS := false
# wrangler dev fetches a Request.cf sample from workers.cloudflare.com at
# start, and prints a stack trace for it offline; the Worker reads no cf.
export CLOUDFLARE_CF_FETCH_ENABLED := false

.PHONY: dev deploy smoke test unit bench profile chaos soak simulate mutants tools build tinygo clean

tools: node_modules/.installed

# npm ci installs exactly the lock, which lists every platform's workerd
# (test/lock_test.go): npm installs no optional package the lock omits.
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@node --version
	@touch $@

build:
	./build.sh

# TinyGo from the Go module proxy and Debian's packages, which COMPILER=auto
# then builds with; a second run only checks. A deploy needs it
# (COMPILER=tinygo, docs/deploy.md); nothing else does.
tinygo:
	tools/install-tinygo.sh

# tools/dev.sh passes .dev.vars on whole, and OPEN_ACCESS=true unless it
# sets API_TOKENS or OPEN_ACCESS: the local Worker runs open because make
# dev says so.
dev: tools
	tools/dev.sh --ip 127.0.0.1 --port $(PORT) --persist-to .wrangler/state $(if $(ENV),--env $(ENV))

# make deploy ENV=ledger [SECRETS=file] [DRY=1]: checks the environment
# (ENV empty: KV mode) where Cloudflare would refuse it, deploys it, and
# gives the dead-letter queue its 14 days; again, it changes nothing.
# SECRETS, NAME=value lines, sets secrets in the deploy (the first one
# needs API_TOKENS so); DRY=1 checks and prints the commands only.
# A deploy builds with the pinned TinyGo, and fails where it is missing
# rather than fall back (COMPILER=go deploys standard Go on purpose).
deploy: tools
	COMPILER=$(if $(filter auto,$(COMPILER)),tinygo,$(COMPILER)) go run ./tools/deploy -env "$(ENV)" $(if $(SECRETS),-secrets "$(SECRETS)") $(if $(DRY),-dry)

# make smoke URL=https://... [TOKEN=...]: places an order at a running
# Worker, replays it and looks it up (submit-order.sh); non-zero on any
# difference from the contract.
smoke:
	@[ -n "$(URL)" ] || { echo "make smoke: set URL=, the Worker's address (and TOKEN, a client's token: TOKEN=... make smoke URL=...)"; exit 2; }
	@API_TOKEN="$$TOKEN" ./submit-order.sh "$(URL)"

# The edit-test loop: no Node.js, no wrangler; the end-to-end tests skip.
unit:
	go vet ./...
	GOOS=js GOARCH=wasm go vet ./...
	go test ./...

# gotestsum (a Go tool dependency in go.mod) runs go test and sums up; its
# post-run command prints the closing line: N passed, N failed, N skipped.
# -parallel 64: nearly every end-to-end test is parallel and mostly waits,
# the tests of the shared Workers one at a time on a lock (shareWorkers),
# beside those with Workers of their own, whose starts test/ bounds.
# The browser tests run where Chromium is installed, and say in one line
# that they were skipped where it is not; EDGE_ORDERS_REQUIRE_BROWSER=1
# (.ci/run) makes that a failure.
test: tools
	go vet ./...
	GOOS=js GOARCH=wasm go vet ./...
	./build.sh
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || [ -n "$$EDGE_ORDERS_CHROMIUM" ] || \
		echo "make test: browser tests (TestBrowser, TestOpsPage…) skipped: Chromium is not installed (apt-get install chromium)"
	EDGE_ORDERS_E2E=1 EDGE_ORDERS_BUILT=1 go tool gotestsum --format pkgname-and-test-fails \
		--post-run-command 'sh -c "echo $$((TESTS_TOTAL - TESTS_FAILED - TESTS_SKIPPED)) passed, $$TESTS_FAILED failed, $$TESTS_SKIPPED skipped"' \
		-- -count=1 -parallel 64 -timeout 20m ./...

# The Go Worker (KV and ledger mode) against the seed's TypeScript Worker and
# the JavaScript port, under wrangler dev: production latency (simulated
# binding delays) and local saturation, and a TinyGo build's saturation
# when tinygo is on PATH; 10 to 15 minutes. BENCH_FLAGS=-quick for a short
# look; bench/README.md has the rest.
bench: tools
	go run ./bench $(BENCH_FLAGS)

# A CPU profile of the Go Worker's isolate through the V8 inspector, per
# mode and scenario: the functions with the most self time, Go's by name
# (bench/README.md, Profiling); about two minutes. PROFILE_FLAGS to change
# it (-profile-out DIR keeps each profile for Chrome's DevTools).
profile: tools
	go run ./bench -profile $(PROFILE_FLAGS)

# The simulator for longer than make unit runs it: SEEDS histories a mode
# from a fresh random seed, or SEED=... to replay (and shrink) a failure.
SEEDS ?= 20000
simulate:
	set -o pipefail; $(if $(SEED),RAPID_SEED=$(SEED) RAPID_CHECKS=1,SIM_RANDOM_SEED=1 RAPID_CHECKS=$(SEEDS)) \
		go test -count=1 -v -timeout 0 -run 'TestSimulatedHistoriesKeepTheInvariants' ./sim | grep --line-buffered -v '^    sim_test.go:[0-9]*: \[rapid\] draw'

# Bugs planted in the lifecycle, each reverting a fix in its history: every
# one must be caught, by the unit tests or the simulator; and the defences
# KV's limits make necessary, each removed, which the simulator alone must
# catch within a stated number of histories (internal/devtools/mutants);
# a few minutes each. CI runs it after make test.
mutants:
	go run ./internal/devtools/mutants

# Fault injection for longer than make test does: FAULT_RATE of the storage
# calls fail (half before, half after they take effect), KEYS keys.
FAULT_RATE ?= 0.2
KEYS ?= 200
chaos: tools build
	EDGE_ORDERS_E2E=1 EDGE_ORDERS_FAULT_RATE=$(FAULT_RATE) EDGE_ORDERS_FAULT_KEYS=$(KEYS) \
		go test -count=1 -v -timeout 30m -run 'TestFaultsNeverDuplicate' ./test

# Several minutes of mixed load in each mode; prints statuses, p50/p99 per
# minute and the Go instance's memory.
SOAK_MINUTES ?= 4
SOAK_CONNS ?= 8
soak: tools build
	EDGE_ORDERS_E2E=1 EDGE_ORDERS_SOAK_MINUTES=$(SOAK_MINUTES) EDGE_ORDERS_SOAK_CONNS=$(SOAK_CONNS) \
		go test -count=1 -v -timeout 60m -run 'TestSoak' ./test

clean:
	rm -rf build .wrangler
