# puls.proxmox — developer entry points. `make test` and `make demo` work on a fresh clone.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The checkout seen as ansible_collections/puls/proxmox, as Ansible and pytest import it.
COLLECTIONS := .build/collections
LINK := $(COLLECTIONS)/ansible_collections/puls/proxmox
# ansible-test needs a real directory named ansible_collections/puls/proxmox (no symlink), outside
# this git checkout (inside it, git would hide the copy as ignored and ansible-test would see no files).
# One copy per user and checkout: two checkouts testing at once must not share it.
SANITY_ROOT := $(or $(TMPDIR),/tmp)/puls-proxmox-sanity-$(shell id -u)-$(shell printf %s '$(CURDIR)' | cksum | cut -d' ' -f1)/ansible_collections/puls/proxmox
NETNS := hacking/netns-run
PYTEST := $(BIN)/python -m pytest
# The peer make bench compares with (community.proxmox from the ansible package) in its own venv; the bench smoke
# test of the integration stage runs it too. BENCH_ARGS: bench/bench.py's options (--sizes 10,50,100 ...).
PEER_VENV := bench/.peer-venv/.installed
BENCH_ARGS ?=
# CHAOS_ARGS: tests/chaos/campaign.py's options (--rounds 20 --seed 2026 --faults 4 --fleet demo ...).
CHAOS_ARGS ?=
# ROUNDS: how often make soak repeats the race of two runs started together (tests/integration/test_concurrent_runs.py).
ROUNDS ?= 10
# VERSIONS: the ansible-core releases of tests/matrix/versions that make matrix proves (all of them by default: "2.16 2.21").
VERSIONS ?=
# The oldest and newest of them: make test's matrix stage.
MATRIX_ENDS := $(shell awk '!/^\#/ && NF == 2 { print $$1 }' tests/matrix/versions | sed -n '1p;$$p')
# SEEDS: the seeds of tests/integration/fleetgen.py's fleets for make plan-fuzz (make plan-fuzz SEEDS="33 34 35").
SEEDS ?= $(shell seq 33 52)

export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/$(COLLECTIONS)
export PATH := $(CURDIR)/$(BIN):$(PATH)
export NO_COLOR := 1

.PHONY: help setup system-deps-test system-deps-demo test generate sanity lint unit integration matrix matrix-ends lab demo bench bench-docs chaos plan-fuzz soak clean

help:
	@echo "make test   set up .venv and run every test stage (sanity, lint, unit, integration, matrix-ends)"
	@echo "make generate  rewrite the files made from the option table of pve_vm and pve_container (plugins/module_utils/_guest_options.py)"
	@echo "make demo   set up, start the local Proxmox lab and show the collection against it"
	@echo "make matrix VERSIONS=\"2.16 2.21\"  sanity, unit tests and the demo's four runs on each ansible-core of tests/matrix/versions"
	@echo "make lab    run the local Proxmox lab in the foreground and print its PROXMOX_* settings"
	@echo "make bench  benchmark a zero-drift reconcile, growth and parallel create against community.proxmox"
	@echo "make bench-docs  rewrite the tables of docs/performance.md from the last make bench"
	@echo "make chaos  reconcile the demo fleet through 20 rounds of injected faults and check the invariants"
	@echo "make plan-fuzz SEEDS=\"33 34\"  check that the plan equals the run on more generated fleets"
	@echo "make soak ROUNDS=10  repeat the race of two runs started together on one fleet (make test runs 3 rounds)"

$(STAMP): tests/requirements.txt requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt
	@touch $@

$(LINK):
	@mkdir -p $(dir $@)
	@ln -sfn ../../../.. $@

setup: $(STAMP) $(LINK)

# The Debian packages of bindep.txt's test or demo profile: installed when root, else the exact command to run.
# Explicit targets, not a pattern rule: make never searches implicit rules for a .PHONY target, so a pattern rule
# here was silently skipped ("Nothing to be done") and a fresh machine got no system packages.
system-deps-test system-deps-demo: $(STAMP)
	@hacking/system-deps $(@:system-deps-%=%)

test: setup system-deps-test
	@$(MAKE) --no-print-directory sanity lint unit integration matrix-ends

# The doc fragments vm_options and ct_options, the role variables and pve_container's keys of argument_specs.yml and
# docs/index.md's inventory reference, from plugins/module_utils/_guest_options.py; the unit test test_guest_options.py fails when one is out of date.
generate: setup
	@$(BIN)/python hacking/generate_options.py

sanity: setup system-deps-test
	@echo "== stage: ansible-test sanity"
	@mkdir -p ~/.ansible/test/cache
	@cp hacking/get_pip_offline.py ~/.ansible/test/cache/get_pip_24_2.py
	@rm -rf $(SANITY_ROOT) && mkdir -p $(SANITY_ROOT)
	@git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C $(SANITY_ROOT)
	@mkdir -p .build && cd $(SANITY_ROOT) && { $(CURDIR)/$(BIN)/ansible-test sanity --venv --python 3.11 --color no 2>&1; \
	    echo "ansible-test exit status: $$?"; } | tee $(CURDIR)/.build/sanity.log | grep -vE '^(Running sanity test|Read [0-9]+ sanity)' || true
	@ran=$$(grep -c '^Running sanity test' .build/sanity.log || true); \
	 failed=$$(grep -cE '^ERROR: (The [0-9]+ sanity test|Found [0-9]+ )' .build/sanity.log || true); \
	 echo "sanity: $$ran tests run, $$failed failed"; test "$$failed" = 0 && ! grep -q '^FATAL' .build/sanity.log \
	 && grep -q '^ansible-test exit status: 0$$' .build/sanity.log

lint: setup
	@echo "== stage: lint (ruff, mypy, ansible-lint production profile)"
	@$(BIN)/ruff check --quiet .
	@$(BIN)/ruff format --check --quiet .
	@cd $(COLLECTIONS) && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/mypy.ini ansible_collections/puls/proxmox/plugins
	@$(BIN)/ansible-lint --profile production --offline 2>&1 | tail -n 40

unit: setup system-deps-test
	@echo "== stage: unit tests"
	@$(PYTEST) tests/unit -q

integration: setup system-deps-test $(PEER_VENV)
	@echo "== stage: integration tests (lab, private network namespace)"
	@$(NETNS) $(PYTEST) tests/lab_tests tests/integration -q -n 2 --maxschedchunk 1 --durations=40

# Each release in its own venv (.build/matrix/VERSION, kept for the next run): hacking/matrix.
matrix: setup system-deps-demo
	@echo "== stage: matrix ($(or $(VERSIONS),every release of tests/matrix/versions))"
	@VERSIONS="$(VERSIONS)" hacking/matrix

# The oldest and the newest release: make test's last stage (the other releases are make matrix's).
matrix-ends:
	@$(MAKE) --no-print-directory matrix VERSIONS="$(MATRIX_ENDS)"

lab: setup
	@PYTHONPATH=tests $(BIN)/python -m lab --state-dir .lab

demo: setup system-deps-demo
	@hacking/demo

# Installed outside the private network namespace, which has no route to the package index.
$(PEER_VENV): bench/requirements-peer.txt
	@bench/peer-venv $(PYTHON)

bench: setup $(PEER_VENV)
	@$(NETNS) $(BIN)/python bench/bench.py $(BENCH_ARGS)

bench-docs: setup
	@$(BIN)/python bench/perf_docs.py

chaos: setup
	@$(NETNS) $(BIN)/python tests/chaos/campaign.py $(CHAOS_ARGS)

# Generated fleets (tests/integration/fleetgen.py) of these seeds: the check run's plan must be the real run's.
plan-fuzz: setup
	@PULS_PLAN_SEEDS="$(SEEDS)" $(NETNS) $(PYTEST) tests/integration/test_plan_equals_run.py -q -n 2 -k generated

# The two-run race of the concurrency tests, ROUNDS times in a row (make test runs it 3 times).
soak: setup system-deps-test
	@PULS_CONCURRENCY_ROUNDS=$(ROUNDS) $(NETNS) $(PYTEST) tests/integration/test_concurrent_runs.py -q -p no:xdist -k round_after_round

clean:
	rm -rf .build .lab
