# lockstorm — see README.md. The two commands a newcomer runs:
#   make scenarios   run every scenario and print the verdict table
#   make test        run the tests (installs redis-server, stress-ng and chromium when missing and root)
SHELL := /bin/bash
GO ?= go
BIN := build/lockstorm
SHIM := build/clockshim.so
# The runner and the tests use the shim make built; without make they
# build it themselves into the user's cache.
export LOCKSTORM_CLOCKSHIM := $(CURDIR)/$(SHIM)

.PHONY: all build scenarios test examples-test docs planted gate bench-gate noisy noisy-gate redis-server stress-ng chromium clients vet clean zoo zoo-quick zoo-ci zoo-clients zoo-page seed001

all: build

# The server clock shim: LD_PRELOADed into spawned redis-server processes,
# it adds an offset read from an mmap'd file to CLOCK_REALTIME, so a clock
# jump changes when Redis expires keys.
$(SHIM): internal/clock/clockshim/clockshim.c
	@mkdir -p build
	gcc -shared -fPIC -O2 -Wall -o $@ $<

build: $(SHIM)
	$(GO) build -o $(BIN) ./cmd/lockstorm

# The main job: every embedded scenario against the implementations it
# lists. Every job the sim backend can run runs in virtual time; the rest
# on real redis-server when installed, else on the embedded backend (the
# summary says how many ran on each).
scenarios: build
	./$(BIN) run --all --backend sim,auto

# Tests that claim Redis behaviour start their own redis-server on a free
# loopback port, so the binary must be installed.
redis-server:
	@if ! command -v redis-server >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing redis-server (apt-get)"; \
	    (apt-get install -y redis-server >/dev/null 2>&1 || \
	     (apt-get update >/dev/null && apt-get install -y redis-server >/dev/null)) || exit 1; \
	  else \
	    echo "redis-server is missing; run: sudo apt-get install -y redis-server"; exit 1; \
	  fi; \
	fi

# stress-ng keeps a core busy for `make noisy`; installed like redis-server.
stress-ng:
	@if ! command -v stress-ng >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing stress-ng (apt-get)"; \
	    (apt-get install -y stress-ng >/dev/null 2>&1 || \
	     (apt-get update >/dev/null && apt-get install -y stress-ng >/dev/null)) || exit 1; \
	  else \
	    echo "stress-ng is missing; run: sudo apt-get install -y stress-ng"; exit 1; \
	  fi; \
	fi

# The example client processes (examples/clients, lockimpl/exec): seed 000's
# PHP lock needs php-cli and php-redis, the Python ones python3-redis (for
# /usr/bin/python3), the Debian zoo's (examples/zoo/debian) Symfony Lock and
# Laravel's cache lock php-symfony-lock, php-illuminate-cache and
# php-illuminate-redis, node-redlock node, npm and its lockfile's packages, seed
# 001's Java lock a JDK (compiled into build/java). Installed when missing and
# root, like redis-server; the tests fail under CI=true without them.
CLIENT_DEBS := php-cli php-redis php-symfony-lock php-illuminate-cache php-illuminate-redis python3-redis nodejs npm default-jdk-headless
clients:
	@missing=""; \
	command -v php >/dev/null 2>&1 && php -r 'exit(class_exists("Redis") ? 0 : 1);' || missing="$$missing php-cli php-redis"; \
	/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || missing="$$missing python3-redis"; \
	[ -f /usr/share/php/Symfony/Component/Lock/autoload.php ] || missing="$$missing php-symfony-lock"; \
	[ -f /usr/share/php/Illuminate/Cache/autoload.php ] || missing="$$missing php-illuminate-cache"; \
	[ -f /usr/share/php/Illuminate/Redis/autoload.php ] || missing="$$missing php-illuminate-redis"; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	command -v javac >/dev/null 2>&1 || missing="$$missing default-jdk-headless"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing$$missing (apt-get)"; \
	    (apt-get install -y $$missing >/dev/null 2>&1 || \
	     (apt-get update >/dev/null && apt-get install -y $$missing >/dev/null)) || exit 1; \
	  else \
	    echo "client runtimes missing; run: sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi
	@examples/clients/node-redlock/install.sh
	@examples/clients/java/build.sh

# Seed 001's Java client (examples/clients/java) on the whole battery, every
# scenario a client process can run (a process is handed node addresses: no
# Sentinel discovery, no Redis Cluster), on seeds 1-3 (SEED001_SEEDS), beside
# its Go port getset; the client matrix in `make test` runs three of them.
SEED001_SEEDS ?= 3
SEED001 := java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp build/java Seed001RedisLock
SEED001_SCENARIOS := $(filter-out cluster-% sentinel-%,$(basename $(notdir $(wildcard scenarios/spec/specs/*.yaml))))
seed001: build redis-server clients
	./$(BIN) run $(addprefix --scenario ,$(SEED001_SCENARIOS)) --exec '$(SEED001)' --impl getset \
	  --seed 1 --seeds $(SEED001_SEEDS) --backend redis-server --out build/seed001

# The report tests render the suite page and a timeline in headless
# Chromium (Debian's package) and fail on a page error; under CI=true a
# missing chromium fails them instead of skipping.
chromium:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium (apt-get)"; \
	    (apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 || \
	     (apt-get update >/dev/null && apt-get install -y --no-install-recommends chromium >/dev/null)) || exit 1; \
	  else \
	    echo "chromium is missing; run: sudo apt-get install -y --no-install-recommends chromium"; exit 1; \
	  fi; \
	fi

vet:
	$(GO) vet ./...
	cd examples && $(GO) vet ./...
	@for m in $(ZOO_GO) $(ZOO_REPRO_GO); do (cd $$m && $(GO) vet ./...) || exit 1; done
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# After the main tests, the examples module (its own go.mod): lockstorm's
# first outside user, real lock libraries on trial through the public API.
# Then CI's part of the zoo.
# One core kept busy by stress-ng for the rest of a recipe's shell (killed
# however it ends): a verdict that holds only on a quiet machine is not
# earned (issue 17).
NOISE = stress-ng --cpu 1 --timeout 1200s >/dev/null 2>&1 & load=$$!; \
	trap 'kill $$load 2>/dev/null; wait $$load 2>/dev/null' EXIT; \
	echo "noisy: stress-ng --cpu 1 (pid $$load) keeps a core busy"

# TEST_NOISE=1 runs the examples module beside stress-ng --cpu 1: CI sets
# it, so the examples battery's run on a noisy machine is this one and not
# a second, two-minute one in `make noisy` (CI runs `make noisy-gate`).
# The two longest packages (about three minutes each) are named first, so
# they start first rather than behind the short ones' queue: with them
# first, CI's make test took 670 s against 749 s.
SLOW_PKGS = ./scenarios/ ./cmd/lockstorm/
test: redis-server stress-ng chromium clients zoo-clients vet $(SHIM)
	@$(call timed,go test,CI=$${CI:-true} $(GO) test -count=1 -timeout 10m $(SLOW_PKGS) ./...)
	@$(call timed,examples-test,$(MAKE) --no-print-directory examples-test)
	@$(call timed,zoo-ci,$(MAKE) --no-print-directory zoo-ci)

# timed runs a step and prints its wall time (CI's budget is 15 minutes;
# .ci/run prints each target's, this each step's of make test).
timed = s=$$(date +%s); $(2); rc=$$?; echo "make test: $(1) took $$(( $$(date +%s) - s )) s"; exit $$rc

# The examples module's tests; EXAMPLES_RUN narrows them (a -run pattern).
EXAMPLES_RUN ?= .
examples-test:
	@$(if $(TEST_NOISE),$(NOISE);) \
	cd examples && CI=$${CI:-true} $(GO) test -count=1 -timeout 10m -run '$(EXAMPLES_RUN)' ./...

# Regenerate the tool's own output in the docs (docs/cli.md's -h pages)
# from the binary; the docs test (TestDocs, in `make test`) fails when they
# differ. See docs/docs-test.md.
docs: $(SHIM)
	LOCKSTORM_DOCS_UPDATE=1 $(GO) test -count=1 -run 'TestDocs$$' ./cmd/lockstorm/

# The battery's own test (examples/planted): locks with bugs planted in
# them, each flagged with its class by the shipped battery and nothing naming
# it, their correct originals flagged by nothing; about fifteen minutes a
# seed, so not in `make test`. SEEDS=3 for three seeds.
SEEDS ?= 1
planted: redis-server clients $(SHIM)
	cd examples && CI=$${CI:-true} LOCKSTORM_TEST_PLANTED=1 LOCKSTORM_TEST_SEEDS=$(SEEDS) $(GO) test -count=1 -timeout 60m -run TestPlanted -v ./planted/

# The regression gate: gated scenarios only (scheduled modes, and random
# modes found on 20 of 20 seeds); exit 1 on any unexpected verdict, printing
# only the differences and the commands that replay them. Every job the sim
# backend can run runs there (virtual time: no verdict depends on the
# machine's load), the rest on redis-server; then the sim part again on
# GATE_SIM_SEEDS more seeds (docs/sim.md).
SEED ?= 0
GATE_SIM_SEEDS ?= 3
# GATE_NOISE=1 runs it beside stress-ng --cpu 1: CI does, so one gate is
# both the regression gate and its run on a noisy machine (make noisy-gate).
gate: build redis-server $(if $(GATE_NOISE),stress-ng)
	@$(if $(GATE_NOISE),$(NOISE);) \
	./$(BIN) run --all --gated --only-diff --junit build/junit.xml --seed $(SEED) --backend sim,redis-server && \
	./$(BIN) run --all --gated --only-diff --backend sim --seed 2 --seeds $(GATE_SIM_SEEDS) 2>/dev/null

# The bench guards itself: the quick rows' ratios (lockstorm against raw
# porcupine, redis-benchmark, proxied against direct, the recorder against
# sizeof(Op)) against the committed baseline; exit 1 on a regression past
# the tolerances written in it. The battery's wall-time row (group 6) takes
# a minute or more, which CI's budget has no room for: BENCH_ONLY=1,2,5,6
# guards it too.
BENCH_ONLY ?= 1,2,5
bench-gate: build
	./$(BIN) bench --quick --only $(BENCH_ONLY) --sizes 100000,1000000 --compare .ci/bench-baseline.json

# The gate and the examples battery on a noisy machine: one core kept busy
# by stress-ng for the whole target (killed however it ends). Users' CI
# machines are noisier than ours: a verdict that needs a quiet machine is
# not earned. Zero unexpected verdicts, as in `make gate`.
noisy: build stress-ng
	@$(MAKE) --no-print-directory examples-test TEST_NOISE=1 EXAMPLES_RUN='TestBattery$$$$'
	@$(MAKE) --no-print-directory noisy-gate

# The gate alone beside stress-ng --cpu 1 (CI: its examples ran noisy in
# `make test TEST_NOISE=1`).
noisy-gate: stress-ng
	@$(MAKE) --no-print-directory gate GATE_NOISE=1

# The zoo (examples/zoo, docs/zoo.md): published lock libraries at the
# versions people run, a module per version. `make zoo` runs the battery
# against each on ZOO_SEEDS and writes build/zoo/: zoo.md (library, version,
# findings per scenario, wall time), index.html (the suite page) and
# report.txt; it fails when a known bug is not found at its version or
# shows at its fixed one (a verdict that differs from the claims' is a
# finding of the matrix, not a failure: lockstorm report's exit 1). On
# three seeds a Go release module took 4-8 minutes and an npm client 3-7
# (about an hour in all, on a loaded machine), so CI runs zoo-ci (below)
# instead. ZOO_SHARD=K/N (0-based) runs the K-th of N slices of the locks
# (zootest.Shard: by each lock's name, so the npm module's locks spread
# over the slices; a Kubernetes Indexed Job sets it from
# JOB_COMPLETION_INDEX, deploy/zoo), into ZOO_OUT (default build/zoo).
# `make zoo-quick` is each redsync release's known-bug subtests (dead-node
# among them) and quorum-slow-extend, and the npm clients' hellos, on
# seed 1 (80 s, mostly compiling).
ZOO_GO := $(sort $(dir $(wildcard examples/zoo/*/go.mod)))
ZOO_SEEDS ?= 1,2,3
ZOO_SHARD ?= 0/1
ZOO_OUT ?= build/zoo
zoo: build redis-server zoo-clients
	@rm -rf $(ZOO_OUT) && mkdir -p $(ZOO_OUT)
	@out=$(abspath $(ZOO_OUT)); fail=0; \
	for m in $(ZOO_GO); do \
	  if ls $$m*_test.go >/dev/null 2>&1; then \
	    echo "zoo: $$m"; \
	    (cd $$m && LOCKSTORM_ZOO=1 LOCKSTORM_ZOO_SEEDS=$(ZOO_SEEDS) LOCKSTORM_ZOO_OUT=$$out LOCKSTORM_ZOO_SHARD=$(ZOO_SHARD) \
	      $(GO) test -count=1 -timeout 60m -run TestZoo -v . > $$out/$$(basename $$m).log 2>&1) || \
	      { fail=1; echo "zoo: $$m FAILED ($$out/$$(basename $$m).log)"; grep -E '^\s+(known|zootest).*go:[0-9]+:' $$out/$$(basename $$m).log | head -20; }; \
	  fi; \
	done; \
	ls -d $$out/*/ >/dev/null 2>&1 || { echo "zoo: shard $(ZOO_SHARD) ran no lock"; exit $$fail; }; \
	./$(BIN) report -o $$out/index.html --zoo $$out/zoo.html --format markdown $$out/*/ > $$out/report.txt; \
	  [ $$? -le 1 ] || fail=1; \
	{ echo "# The zoo: seeds $(ZOO_SEEDS), shard $(ZOO_SHARD)"; echo; \
	  echo "| library | version | lock | seeds | findings per scenario (over the seeds) | battery wall |"; echo "|---|---|---|---|---|---|"; \
	  cat $$out/*/zoo.md; } > $$out/zoo.md; \
	cat $$out/zoo.md; echo "zoo: $(ZOO_OUT)/zoo.md, $(ZOO_OUT)/zoo.html (the page), $(ZOO_OUT)/index.html"; exit $$fail

# The zoo as a page (out/zoo/index.html): each library × scenario of the
# last `make zoo` (build/zoo/*/results.jsonl), coloured by its worst
# verdict over the seeds, each cell linked to its witness (verdicts,
# evidence, replay commands; the kept run folders' spec and history).
# ZOO_RESULTS names other folders (a shard's, a copy of an earlier run).
ZOO_RESULTS ?= $(wildcard build/zoo/*/)
zoo-page: build
	@[ -n "$(ZOO_RESULTS)" ] || { echo "zoo-page: no build/zoo/*/ results: run make zoo first"; exit 1; }
	@mkdir -p build/zoo-page; ./$(BIN) report -o build/zoo-page/suite.html --zoo out/zoo/index.html $(ZOO_RESULTS) > build/zoo-page.txt; \
	  [ $$? -le 1 ] || { cat build/zoo-page.txt; exit 1; }; grep '^zoo page:' build/zoo-page.txt

# The npm zoo's packages (examples/zoo/npm: one package.json, npm aliases
# for several versions of one package), from its committed lockfile.
zoo-clients: clients
	@if [ ! -d examples/zoo/npm/node_modules ] || \
	    [ examples/zoo/npm/package-lock.json -nt examples/zoo/npm/node_modules ]; then \
	  (cd examples/zoo/npm && npm ci --no-audit --no-fund --loglevel=error) && touch examples/zoo/npm/node_modules; \
	fi

# CI's part of the zoo (in `make test`): the known bugs, each asserted at
# a release that has it and at one that fixed it, on seed 1. redsync v4.0.3
# (release false successes on the scheduled expired releases, unsafe on
# extend-reply-late) against v4.4.1, the first release that fixed both;
# npm redlock 5.0.0-beta.2 (split-first-try deadlock, grant-after-ttl
# unsafe) against 4.2.0 (safe). Two Go modules, not five: each is a test
# binary to link; the boundary releases (v4.0.4, v4.3.0), the other seeds
# and the battery are `make zoo`'s. The three binaries are linked at once
# (build/zoo-ci), then run one after another, so that no verdict is
# reached beside another module's runs; each runs in its module's folder
# (its go.mod, node_modules) and leaves its log in build/zoo-ci. The Debian
# zoo (redis-py, Symfony Lock, Laravel): CI checks that its clients start and
# are the versions its matrix names (TestZoo without LOCKSTORM_ZOO, under a
# second), and redis-py 4.3.4's false refusal on release-asked-again
# (TestKnownBugs, entry 27, about 4 s); npm's TestKnownBugs also asserts
# 5.0.0-beta.2's release retries on one node against 4.2.0 (entry 18,
# lapsed-lease, about 3 s each); bsm/redislock's adapter tests
# (redislock-v0.10.0, miniredis, under a second) and, at each of its three
# releases, its catalogue entries 8 and 9 on extend-blips (retry-cadence at
# v0.8.2 only, extend-gave-up at v0.8.2 and v0.9.1, each subtest asserting
# the absence too: about 13 s a release on seed 1); rueidislock's client
# process (builds it, 2-3 s with the packages `make vet` compiled, and
# checks its hello and version; no catalogue entry to assert); the zoo's
# sharding (zootest's TestShard, TestInShard: every lock in one slice).
# Then each reproducer of
# docs/findings/repro must still show its bug (exit 1, BUG). About 30 s
# once linked (docs/zoo.md).
# The Go reproducers (docs/findings/repro/*/, a module each, requiring
# only the library) are linked beside the test binaries and run after
# the node ones, each asserted the same way.
ZOO_REPRO_GO := $(patsubst %/go.mod,%,$(wildcard docs/findings/repro/*/go.mod))
ZOO_CI := examples/zoo/redsync-v4.0.3 examples/zoo/redsync-v4.4.1 examples/zoo/npm examples/zoo/debian examples/zoo/redislock-v0.8.2 examples/zoo/redislock-v0.9.1 examples/zoo/redislock-v0.10.0 examples/zoo/rueidislock-v1.0.79
# Two lanes run the modules' tests at once (ZOO_CI's odd and even places),
# each lane one module at a time: each test is one scheduled or seeded run
# at a time on redis-servers of its own, and two at once keep a two-core
# machine's load near 2 (the lanes are about 40 and 30 s of tests where
# one was 66).
zoo-ci: $(SHIM) redis-server zoo-clients
	@mkdir -p build/zoo-ci; rm -f build/zoo-ci/*.log; pids=""; \
	for m in $(ZOO_CI); do \
	  (cd $$m && $(GO) test -c -o $(CURDIR)/build/zoo-ci/$$(basename $$m).test .) & pids="$$pids $$!"; \
	done; \
	for d in $(ZOO_REPRO_GO); do \
	  (cd $$d && $(GO) build -o $(CURDIR)/build/zoo-ci/repro-$$(basename $$d) .) & pids="$$pids $$!"; \
	done; \
	for p in $$pids; do wait $$p || exit 1; done; \
	one() { m=$$1; b=$$(basename $$m); run='TestZoo/^(extend-reply-late|expired-release|dead-node|lockstep)$$'; \
	  [ $$b = npm ] && run='TestKnownBugs$$'; \
	  [ $$b = debian ] && run='^(TestZoo|TestKnownBugs)$$'; \
	  [ $$b = rueidislock-v1.0.79 ] && run='TestZoo$$'; \
	  case $$b in redislock-*) run='TestZooAdapter$$|TestZoo/^(retry-cadence|extend-gave-up)$$';; esac; \
	  (cd $$m && LOCKSTORM_ZOO_SEEDS=1 CI=$${CI:-true} $(CURDIR)/build/zoo-ci/$$b.test \
	    -test.count=1 -test.timeout=5m -test.v -test.run "$$run") > build/zoo-ci/$$b.log 2>&1 || \
	    { echo "zoo-ci: $$m FAILED" >> build/zoo-ci/$$b.log; return 1; }; \
	  grep -qE '^\s+--- PASS' build/zoo-ci/$$b.log || { echo "zoo-ci: $$m: -run $$run selected no test" >> build/zoo-ci/$$b.log; return 1; }; }; \
	lane() { rc=0; for m in "$$@"; do one $$m || rc=1; done; return $$rc; }; \
	i=0; A=""; B=""; for m in $(ZOO_CI); do if [ $$((i % 2)) = 0 ]; then A="$$A $$m"; else B="$$B $$m"; fi; i=$$((i + 1)); done; \
	lane $$A & a=$$!; lane $$B & b=$$!; rc=0; wait $$a || rc=1; wait $$b || rc=1; \
	for m in $(ZOO_CI); do b=$$(basename $$m); \
	  if grep -q '^zoo-ci: .*\(FAILED\|selected no test\)' build/zoo-ci/$$b.log; then cat build/zoo-ci/$$b.log; \
	  else grep -E '^\s*--- ' build/zoo-ci/$$b.log | sed "s|^|zoo-ci: $$b |"; fi; \
	done; \
	exit $$rc
	@cd examples/zoo/redsyncadapter && $(GO) test -count=1 -run 'TestShard$$|TestInShard$$' ./zootest/ | sed 's|^|zoo-ci: zootest shard: |'
	@for r in $(wildcard docs/findings/repro/*.js); do \
	  l=build/zoo-ci/$$(basename $$r).log; \
	  NODE_PATH=examples/zoo/npm/node_modules node $$r > $$l 2>&1; rc=$$?; \
	  if [ $$rc -ne 1 ] || ! grep -q '^BUG' $$l; then cat $$l; echo "zoo-ci: $$r exited $$rc: want 1 and BUG (the bug at the version the zoo pins)"; exit 1; fi; \
	  echo "zoo-ci: $$r: $$(head -1 $$l)"; \
	done
	@for d in $(ZOO_REPRO_GO); do \
	  b=build/zoo-ci/repro-$$(basename $$d); \
	  $$b > $$b.log 2>&1; rc=$$?; \
	  if [ $$rc -ne 1 ] || ! grep -q '^BUG' $$b.log; then cat $$b.log; echo "zoo-ci: $$d exited $$rc: want 1 and BUG (the bug at the version the zoo pins)"; exit 1; fi; \
	  echo "zoo-ci: $$d: $$(grep -m1 '^BUG' $$b.log)"; \
	done

zoo-quick: $(SHIM) redis-server zoo-clients
	@for m in $(ZOO_GO); do ls $$m*_test.go >/dev/null 2>&1 || continue; \
	  (cd $$m && LOCKSTORM_ZOO_SEEDS=1 CI=$${CI:-true} $(GO) test -count=1 -timeout 5m -run TestZoo .) || exit 1; done

clean:
	rm -rf build out
