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

.PHONY: all build scenarios test docs planted gate bench-gate noisy redis-server stress-ng chromium clients vet clean

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
# lists. Uses real redis-server when installed, else the embedded backend
# (and says which).
scenarios: build
	./$(BIN) run --all

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
# /usr/bin/python3), node-redlock node, npm and its lockfile's packages.
# Installed when missing and root, like redis-server; the tests fail under
# CI=true without them.
CLIENT_DEBS := php-cli php-redis python3-redis nodejs npm
clients:
	@missing=""; \
	command -v php >/dev/null 2>&1 && php -r 'exit(class_exists("Redis") ? 0 : 1);' || missing="$$missing php-cli php-redis"; \
	/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || missing="$$missing python3-redis"; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
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
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# After the main tests, the examples module (its own go.mod): lockstorm's
# first outside user, real lock libraries on trial through the public API.
test: redis-server stress-ng chromium clients vet $(SHIM)
	CI=$${CI:-true} $(GO) test -count=1 -timeout 10m ./...
	cd examples && CI=$${CI:-true} $(GO) test -count=1 -timeout 10m ./...

# Regenerate the tool's own output in the docs (docs/cli.md's -h pages)
# from the binary; the docs test (TestDocs, in `make test`) fails when they
# differ. See docs/docs-test.md.
docs: $(SHIM)
	LOCKSTORM_DOCS_UPDATE=1 $(GO) test -count=1 -run 'TestDocs$$' ./cmd/lockstorm/

# The battery's own test (examples/planted): locks with bugs planted in
# them, each flagged with its class by the shipped battery and nothing naming
# it, their correct originals flagged by nothing; about eight minutes a
# seed, so not in `make test`. SEEDS=3 for three seeds.
SEEDS ?= 1
planted: redis-server clients $(SHIM)
	cd examples && CI=$${CI:-true} LOCKSTORM_TEST_PLANTED=1 LOCKSTORM_TEST_SEEDS=$(SEEDS) $(GO) test -count=1 -timeout 60m -run TestPlanted -v ./planted/

# The regression gate: gated scenarios only (scheduled modes, and random
# modes found on 20 of 20 seeds); exit 1 on any unexpected verdict, printing
# only the differences and the commands that replay them.
SEED ?= 0
gate: build
	./$(BIN) run --all --gated --only-diff --junit build/junit.xml --seed $(SEED)

# The bench guards itself: the quick rows' ratios (lockstorm against raw
# porcupine, redis-benchmark, proxied against direct, the recorder against
# sizeof(Op)) against the committed baseline; exit 1 on a regression past
# the tolerances written in it.
bench-gate: build
	./$(BIN) bench --quick --only 1,2,5 --sizes 100000 --compare .ci/bench-baseline.json

# The gate and the examples battery on a noisy machine: one core kept busy
# by stress-ng for the whole target (killed however it ends). Users' CI
# machines are noisier than ours: a verdict that needs a quiet machine is
# not earned. Zero unexpected verdicts, as in `make gate`.
noisy: build stress-ng
	@stress-ng --cpu 1 --timeout 1200s >/dev/null 2>&1 & load=$$!; \
	trap 'kill $$load 2>/dev/null; wait $$load 2>/dev/null' EXIT; \
	echo "noisy: stress-ng --cpu 1 (pid $$load) keeps a core busy"; \
	(cd examples && CI=$${CI:-true} $(GO) test -count=1 -timeout 10m -run 'TestBattery$$' ./...) && \
	./$(BIN) run --all --gated --only-diff --seed $(SEED)

clean:
	rm -rf build out
