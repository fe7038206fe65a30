# One command for everything: `make test` on a fresh machine builds what it
# needs (a venv, the control-plane binaries, the collection) and runs the unit,
# integration and sanity tests and ansible-lint, and checks the execution
# environment's build context. `make demo` runs the main job on the local
# control plane.
SHELL := /bin/bash
# ansible-core 2.20 needs Python 3.12 or newer; pyenv's is preferred to PATH's.
PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) $(shell command -v python3.12 python3.13 2>/dev/null))
VENV := .venv
BIN := $(abspath $(VENV)/bin)
CACHE := $(abspath .cache)
DEMO_DIR := $(CACHE)/demo-cluster
export ANSIBLE_COLLECTIONS_PATH := $(CACHE)/collections
export PATH := $(BIN):$(PATH)

.PHONY: test venv cluster-bin collection checkout-link kubernetes-core prometheus unit matrix bench-smoke integration rulebook-venv sanity lint ee-context release-check bench demo demo-node-group down clean

# The version matrix, as ansible-core,Python,kubernetes: the oldest ansible-core that meta/runtime.yml allows on a
# controller Python it supports, with the oldest kubernetes client that requirements.txt allows; the newest of each.
MATRIX := 2.16.19,3.11,29.0.0 2.21.5,3.13,37.0.2
# What the matrix runs besides tests/unit: modules and the drain_node and rebalance roles through ansible-playbook.
MATRIX_INTEGRATION := tests/integration/test_cluster_info.py tests/integration/test_drain_node.py \
  tests/integration/test_rebalance.py::test_one_pass_evens_out_added_nodes_within_the_pdb_and_a_second_pass_changes_nothing

test: unit matrix bench-smoke integration sanity lint ee-context release-check

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt tests/requirements.txt
	@test -n "$(PYTHON)" || { echo "Python 3.12 or newer is needed (ansible-core 2.20)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --requirement tests/requirements.txt
	touch $@

cluster-bin:
	python3 tests/cluster/cluster.py build

# The collection installed the normal way, from its built tarball.
collection: venv
	rm -rf $(CACHE)/dist
	$(BIN)/ansible-galaxy collection build --output-path $(CACHE)/dist .
	$(BIN)/ansible-galaxy collection install --force --collections-path $(CACHE)/collections $(CACHE)/dist/kubeops-rotation-*.tar.gz

# The checkout itself on a collections path, for working on it without rebuilding.
checkout-link:
	mkdir -p $(CACHE)/checkout/ansible_collections/kubeops
	ln -sfn $(CURDIR) $(CACHE)/checkout/ansible_collections/kubeops/rotation

unit: venv
	$(BIN)/python -m pytest tests/unit

# The unit tests and MATRIX_INTEGRATION on each combination of MATRIX, each in a venv of its own under
# .cache/matrix (made once, pinned), with the collection installed by `make collection`; a line per combination.
matrix: venv cluster-bin collection checkout-link
	$(BIN)/python tests/matrix/run.py $(addprefix --combo ,$(MATRIX)) $(addprefix --integration ,$(MATRIX_INTEGRATION))

# ansible-rulebook in a venv of its own (its rule engine, drools_jpy, runs on a JDK 17 or newer: JAVA_HOME, else java on
# PATH), with the ansible-core, ansible-runner and kubernetes of tests/requirements.txt; tests/integration/test_eda_source.py
# runs the collection's rulebook with it.
ANSIBLE_RULEBOOK_VERSION := 1.3.2
RULEBOOK_VENV := $(CACHE)/venv-rulebook
export JAVA_HOME ?= $(firstword $(wildcard /usr/lib/jvm/java-17-openjdk-* /usr/lib/jvm/java-21-openjdk-*))
rulebook-venv: $(RULEBOOK_VENV)/.installed
$(RULEBOOK_VENV)/.installed: tests/requirements.txt
	$(PYTHON) -m venv $(RULEBOOK_VENV)
	$(RULEBOOK_VENV)/bin/pip install --quiet ansible-rulebook==$(ANSIBLE_RULEBOOK_VERSION) \
	  $$(grep -E '^(ansible-core|ansible-runner|kubernetes)==' tests/requirements.txt)
	touch $@

# kubernetes.core, as the ansible package ships it: the tests run playbooks written for its conventions against the
# collection (its module_defaults group resolves only where it is installed). Only that collection is unpacked.
ANSIBLE_PACKAGE_VERSION := 14.5.0
KUBERNETES_CORE := $(CACHE)/kubernetes-core
kubernetes-core: $(KUBERNETES_CORE)/.installed
$(KUBERNETES_CORE)/.installed: venv
	rm -rf $(KUBERNETES_CORE) && mkdir -p $(KUBERNETES_CORE)
	$(BIN)/pip download --quiet --no-deps --dest $(KUBERNETES_CORE)/wheel ansible==$(ANSIBLE_PACKAGE_VERSION)
	$(BIN)/python -c 'import sys, zipfile; wheel = zipfile.ZipFile(sys.argv[1]); \
	  wheel.extractall(sys.argv[2], [n for n in wheel.namelist() if n.startswith("ansible_collections/kubernetes/core/")])' \
	  $(KUBERNETES_CORE)/wheel/ansible-$(ANSIBLE_PACKAGE_VERSION)-py3-none-any.whl $(KUBERNETES_CORE)
	rm -rf $(KUBERNETES_CORE)/wheel
	touch $@

# In INTEGRATION_WORKERS pytest-xdist processes, each with a control plane of its own, a test file at a time (a
# file's tests share what its fixtures set up); in one process against a cluster of your own
# (KUBEOPS_TEST_KUBECONFIG), where the tests of two processes would share its warm pool.
INTEGRATION_WORKERS ?= $(if $(KUBEOPS_TEST_KUBECONFIG),0,2)
integration: venv cluster-bin collection checkout-link rulebook-venv kubernetes-core prometheus
	$(BIN)/python -m pytest tests/integration --durations=15 \
	  $(if $(filter-out 0,$(INTEGRATION_WORKERS)),-n $(INTEGRATION_WORKERS) --dist loadfile)

# Prometheus for the gates' tests (tests/cluster/prometheus.py starts its own): Debian's package, as root; where it
# cannot be installed, those tests skip saying so.
prometheus:
	@command -v prometheus >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } || \
	  echo "prometheus could not be installed: the gates' Prometheus tests will skip"

sanity: venv
	tests/sanity/run.sh

lint: venv collection
	# ansible-lint installs the collection it checks into ANSIBLE_HOME: keep that out of ~/.ansible.
	ANSIBLE_HOME=$(CACHE)/ansible-home $(BIN)/ansible-lint --profile production

# The execution environment's build context (execution-environment.yml), written and checked; no image is
# built (that needs a container engine): `podman build -t <tag> .cache/ee-context` builds it from there.
ee-context: venv collection
	rm -rf $(CACHE)/ee $(CACHE)/ee-context $(CACHE)/de-context
	mkdir -p $(CACHE)/ee
	cp $(CACHE)/dist/kubeops-rotation-*.tar.gz $(CACHE)/ee/kubeops-rotation.tar.gz
	$(BIN)/ansible-builder create --file execution-environment.yml --context $(CACHE)/ee-context --output-filename Containerfile
	$(BIN)/python tests/ee/check_context.py --context $(CACHE)/ee-context
	@# The decision environment of EDA controller, from the same tarball: its context must build.
	$(BIN)/ansible-builder create --file extensions/eda/decision-environment.yml --context $(CACHE)/de-context \
	  --output-filename Containerfile

# The release as it ships: the changelog fragments and changelog.yaml, and a fresh build of the working tree into a temporary folder
# (tests/release/test_build.py: no cache, venv, build folder, archive or binary inside, MANIFEST.json's version
# is galaxy.yml's, the top-level paths are the expected ones).
release-check: venv
	$(BIN)/antsibull-changelog lint
	$(BIN)/antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
	$(BIN)/python -m pytest tests/release

# Every benchmark at a small size, once: a smoke test that each runs and its loose sanity checks hold (a tool
# failed, pods left behind, a PDB crossed by ours), not a timing test.
bench-smoke: venv cluster-bin collection
	$(BIN)/python tests/bench/planner_scale.py --quick --runs 1
	$(BIN)/python tests/bench/drain_side_by_side.py --quick
	$(BIN)/python tests/bench/rotation_vs_manual.py --quick
	$(BIN)/python tests/bench/rebalance_vs_descheduler.py --quick
	$(BIN)/python tests/bench/module_costs.py --trials 1

# Side-by-side benchmarks against the tools the collection replaces (not part of `make test`).
bench: venv cluster-bin collection checkout-link
	$(BIN)/python tests/bench/planner_scale.py --json $(CACHE)/bench-planner-scale.json
	$(BIN)/python tests/bench/drain_side_by_side.py --json $(CACHE)/bench-drain-side-by-side.json
	$(BIN)/python tests/bench/drain_side_by_side.py --scenario one-node --json $(CACHE)/bench-drain-one-node.json
	$(BIN)/python tests/bench/rotation_vs_manual.py --json $(CACHE)/bench-rotation-vs-manual.json
	$(BIN)/python tests/bench/karpenter_drift.py --json $(CACHE)/bench-karpenter-drift.json
	$(BIN)/python tests/bench/module_costs.py
	$(BIN)/python tests/bench/rebalance_vs_descheduler.py
	# The placement differential at 2,000 scenarios (200 in the tests): every one must agree with kube-scheduler.
	KUBEOPS_PLACEMENT_SCENARIOS=2000 $(BIN)/python -m pytest tests/integration/test_placement_vs_scheduler.py -q -s
	$(BIN)/python tests/bench/planner_scale.py --spread-every 1 --affinity-every 3 --sizes 250,500,1000

# The article's situation on the real Karpenter: a NodePool change, Drifted NodeClaims, do-not-disrupt pods, and
# rotate_nodes on the drifted nodes (tests/cluster/karpenter_demo.py).
demo: venv cluster-bin collection
	python3 tests/cluster/cluster.py down --dir $(DEMO_DIR)
	python3 tests/cluster/cluster.py up --dir $(DEMO_DIR) --autoscaler karpenter --python $(BIN)/python
	$(BIN)/python tests/cluster/karpenter_demo.py --kubeconfig $(DEMO_DIR)/kubeconfig
	@echo "The demo cluster keeps running: export KUBECONFIG=$(DEMO_DIR)/kubeconfig; 'make down' stops it."

# The same rotation on a node-group style autoscaler (the test provisioner: a fixed pool that scales up from
# pending pods, as cluster-autoscaler with an ASG does).
demo-node-group: venv cluster-bin collection
	python3 tests/cluster/cluster.py down --dir $(DEMO_DIR)
	python3 tests/cluster/cluster.py up --dir $(DEMO_DIR) --provisioner tests/cluster/pools.yaml --python $(BIN)/python
	$(BIN)/python tests/cluster/demo.py --kubeconfig $(DEMO_DIR)/kubeconfig
	@echo "The demo cluster keeps running: export KUBECONFIG=$(DEMO_DIR)/kubeconfig; 'make down' stops it."

down:
	python3 tests/cluster/cluster.py down --dir $(DEMO_DIR)

clean: down
	rm -rf $(VENV) $(CACHE)/matrix $(CACHE)/venv-rulebook $(CACHE)/dist $(CACHE)/collections $(CACHE)/checkout $(CACHE)/sanity \
	  $(CACHE)/ee $(CACHE)/ee-context $(CACHE)/de-context $(CACHE)/kubernetes-core
