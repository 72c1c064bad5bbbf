# One command per check, the same locally and in CI (docs/development.md,
# "Tests"). CI runs .ci/run, which runs `make test`.

SHELL := /bin/bash
GO ?= go
FUZZTIME ?= 30s
# The Debian python, which sees the apt-installed kazoo and pytest (a pyenv
# python3 earlier on PATH would not).
PYTHON ?= /usr/bin/python3

# apt-get needs root; use sudo only when we are not root already.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# Debian packages the test suites use: Apache ZooKeeper (the reference
# server, verify/compat/zkreal, with the servlet API its admin server needs),
# its C client (cli_mt), and kazoo with pytest (the
# Python client suite, with pure-sasl for kazoo's SASL tests and mock,
# which kazoo's test_client.py imports), and MIT Kerberos (a KDC, kadmin.local
# and kinit, and pykerberos for kazoo's GSSAPI) for the Kerberos tests of
# verify/compat/sasl.
APT_PACKAGES := zookeeper zookeeper-bin libservlet-api-java python3-kazoo python3-pytest python3-pure-sasl python3-mock \
	krb5-kdc krb5-admin-server krb5-user python3-kerberos

.PHONY: test test-loaded sweeps deps race check fuzz build invariants chaos

# test is what CI runs: prerequisites, static checks, then every test under
# the race detector, then the full seed sweeps of the simulator and of zab's
# simulations (the race detector slows them five times, so under -race
# verify/sim runs a fraction of the seeds and zab, which starts no
# goroutine, only its fixed and regression seeds). KEEPER_REQUIRE_ZK=1 makes the compat tests fail, not
# skip, when ZooKeeper is missing. The per-package timeout is 30 minutes,
# not go test's 10: on a busy machine the longest packages (the bookie,
# chaos) take more than 10 without anything being wrong.
# SLOW_PKGS are the packages that take longest (minutes, real processes
# and the simulator), named first so that go test starts them first: it
# schedules packages in the order given, and with the longest at the end
# (./... is sorted, and they live under verify/) the run waits for them
# with a core idle. The rest follow from ./... (go test runs each once).
SLOW_PKGS := ./verify/compat/mixed ./verify/chaos ./verify/compat/secmatrix \
	./verify/compat/diff ./verify/compat/crash ./verify/sim ./verify/compat/reconfig
# TEST_P is how many packages go test builds and runs at once (its -p;
# the default is the number of CPUs). Most of the long packages wait more
# than they compute (JVM and process starts, elections, a joining member
# watched for seconds, expiry windows): measured alone, secmatrix uses 0.6
# of a core, chaos 0.9, coordination/server 0.6. With one package per core
# the machine idles while both wait; one more keeps it busy. Every
# verdict is independent of the machine's speed (make test-loaded), so
# the contention this adds must not change one.
TEST_P ?= 3
# SWEEP_NICE is the niceness of the seed sweeps that make test runs beside
# its race phase (see test).
SWEEP_NICE ?= 5

# The keeper binaries the real-process tests run (plain, and with the chaos
# tag) are built once into a temporary directory that KEEPER_PREBUILT_BIN
# names (internal/keeperbin), not linked again by every package.
#
# The tests build with -trimpath: without it the build cache keys every
# package by its directory, so a fresh clone (CI's, a second worktree)
# compiles and links all of it again under -race, about six minutes of
# CPU on two cores; with it they share what was built. -count=1: every
# test runs on every make test, none is answered from the test cache.
#
# The seed sweeps (make sweeps) run beside the race phase, not after it, at
# a lower priority (nice SWEEP_NICE): they only compute, so they take the
# CPU the race phase leaves idle while its tests wait on processes, disks
# and timers, and yield most of it when it does not. Their output follows
# the race phase's; make test fails if either fails.
test: export KEEPER_REQUIRE_ZK = 1
test: export GOFLAGS += -trimpath
test: deps check
	bin=$$(mktemp -d) && trap 'rm -rf "$$bin"' EXIT && \
	$(GO) build -o "$$bin/keeper" ./cmd/keeper && $(GO) build -tags chaos -o "$$bin/keeper-chaos" ./cmd/keeper && \
	{ nice -n $(SWEEP_NICE) $(MAKE) --no-print-directory sweeps > "$$bin/sweeps.log" 2>&1 & } && sweeps=$$! && \
	race=0 && { KEEPER_PREBUILT_BIN="$$bin" $(GO) test -race -count=1 -p $(TEST_P) -timeout 30m $(SLOW_PKGS) ./... || race=$$?; } && \
	sweep=0 && { wait $$sweeps || sweep=$$?; } && \
	echo "== make sweeps (run beside the race phase):" && cat "$$bin/sweeps.log" && \
	[ $$race = 0 ] && [ $$sweep = 0 ]

# sweeps are the full seed sweeps of the simulator, of zab's simulations
# and of the servers run whole in a synctest bubble (verify/bubble,
# about two minutes), without the race detector. Beside make test's race
# phase they get the CPU it leaves, so they end a little after it: about 10
# minutes on a quiet machine, 22 under make test-loaded. Their timeout is
# an hour, twice the race phase's per-package 30 minutes, so that a slower
# or busier machine stretches them without failing them.
sweeps:
	$(GO) test -count=1 -timeout 60m -run 'TestSimulation$$|TestReconfigSimulation$$|TestStandaloneSimulation$$' ./verify/sim
	$(GO) test -count=1 -timeout 60m -run 'TestSimulation$$|TestSimulationMixed$$|TestReconfigSimulation$$' ./coordination/zab -args -reconfigseeds=250
	$(GO) test -count=1 -timeout 60m -run 'TestStandaloneBubble$$' ./verify/bubble -args -bubble.seeds=300
	$(GO) test -count=1 -timeout 60m -run 'TestEnsembleBubble$$' ./verify/bubble -args -bubble.seeds=150

# test-loaded is make test on a busy machine: a busy loop per core and an
# fdatasync-heavy writer on the same disk run until it ends. The suite's
# verdicts must not depend on the machine's speed.
test-loaded:
	bash verify/loaded.sh $(MAKE) test

# deps installs what is missing and nothing else, so it is cheap to repeat.
deps:
	@missing=""; \
	[ -x /usr/share/zookeeper/bin/zkServer.sh ] && [ -f /usr/share/java/zookeeper.jar ] || missing="$$missing zookeeper"; \
	[ -x /usr/lib/zookeeper/bin/cli_mt ] || missing="$$missing zookeeper-bin"; \
	[ -f /usr/share/java/servlet-api.jar ] || missing="$$missing libservlet-api-java"; \
	$(PYTHON) -c 'import kazoo' 2>/dev/null || missing="$$missing python3-kazoo"; \
	$(PYTHON) -c 'import pytest' 2>/dev/null || missing="$$missing python3-pytest"; \
	$(PYTHON) -c 'import puresasl' 2>/dev/null || missing="$$missing python3-pure-sasl"; \
	$(PYTHON) -c 'import mock' 2>/dev/null || missing="$$missing python3-mock"; \
	[ -x /usr/sbin/krb5kdc ] || missing="$$missing krb5-kdc"; \
	[ -x /usr/sbin/kadmin.local ] || missing="$$missing krb5-admin-server"; \
	[ -x /usr/bin/kinit ] || missing="$$missing krb5-user"; \
	$(PYTHON) -c 'import kerberos' 2>/dev/null || missing="$$missing python3-kerberos"; \
	if [ -n "$$missing" ]; then \
		echo "deps: installing$$missing"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(APT_PACKAGES); \
	fi
	$(GO) mod download

race:
	$(GO) test -race ./...

# check: formatting, vet (also of the chaos build's hooks), staticcheck
# (pinned; go run fetches and caches it), and the house rules
# (internal/lint).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
check:
	@unformatted=$$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*' -print0 | xargs -0 gofmt -l); \
	if [ -n "$$unformatted" ]; then echo "gofmt -l reports:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags chaos ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) test ./internal/lint

# fuzz runs every fuzz target for FUZZTIME, one at a time.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' "$$pkg" | grep '^Fuzz' || true); do \
			echo "== $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s "$$pkg"; \
		done; \
	done

# build stamps the binary with the commit (cmd/keeper/ldflags.sh), which
# go build alone does not in a worktree or with GOFLAGS=-buildvcs=false.
build:
	$(GO) build -ldflags "$$(sh cmd/keeper/ldflags.sh)" -o bin/keeper ./cmd/keeper

invariants:
	$(GO) test -tags invariants ./...

# chaos runs the fault-injection scenarios (package chaos) for longer than
# make test does: each scenario's fault phase lasts CHAOS_DURATION. A failed
# scenario prints its seed (CHAOS_SEED=N replays the harness's choices) and
# keeps its history and the servers' files under $TMPDIR.
# It also rolls a live Apache ZooKeeper ensemble to keeper and back five
# times, with and without leader kills (verify/compat/mixed).
CHAOS_DURATION ?= 5m
chaos:
	CHAOS_DURATION=$(CHAOS_DURATION) $(GO) test -count=1 -timeout 0 -v -run 'TestScenario' ./verify/chaos
	KEEPER_REQUIRE_ZK=1 $(GO) test -count=1 -timeout 0 -v -run 'TestRollingMigration' ./verify/compat/mixed -roll.rounds=5
