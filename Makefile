# faultline: thin wrapper over hack/*.sh. `make` or `make help` lists targets.
.DEFAULT_GOAL := help
SHELL := /usr/bin/env bash

.PHONY: help demo build image envtest kind-image lab-manifests test test-unit test-integration test-e2e test-nightly test-differential scorecard-chain lint verify fuzz bench clean

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

demo: ## Build what the lab needs, then run power-off-worker on it (README's first command)
	hack/envtest.sh
	hack/build.sh
	bin/faultline run power-off-worker

image: ## faultline's container image, built offline (faultline.dev/faultline:v0.1.0-<commit>)
	hack/image.sh

envtest: ## Build kube-apiserver and etcd from source into bin/envtest (cached by version, a copy in ~/.cache/faultline/envtest)
	hack/envtest.sh

kind-image: ## Build the kind node image offline (cached in ~/.cache/faultline/kind by version; needs root and hack/docker.sh)
	hack/docker.sh
	hack/kind-image.sh

lab-manifests: ## Copy Cluster API and CAPV CRDs and webhooks from the module cache into providers/lab/management/manifests
	hack/lab-manifests.sh

build: ## Build bin/faultline
	hack/build.sh

test: ## Unit and integration tests: -race, then the lab's and kind's integration tests (README's test command)
	hack/test.sh

test-unit: ## Unit tests only (-short)
	hack/test.sh -short

test-integration: ## Integration tests only (TestIntegration*: vcsim, the lab, CLI, crash)
	hack/test.sh -run TestIntegration

test-e2e: ## A Ginkgo suite: SUITE=nightly|preupgrade|incidents PROVIDER=lab|kind|vsphere PARALLEL=N NODES=simulated|containers RELEASE=NAME|all UPGRADE_TO=NAME UPGRADE_RUNS=N GINKGO_LABEL_FILTER= GINKGO_FOCUS= FLAKE_ATTEMPTS=N E2E_CONFIG= ARTIFACTS=
	hack/test-e2e.sh

test-nightly: ## Nightly: make test with every tier's nightly part, then make test-differential and the nightly suite on real nodes
	hack/test-nightly.sh

test-differential: ## Nightly: every lab scenario on v1.13 in-process and as its own binaries, compared (FAULTLINE_DIFFERENTIAL=a,b for some)
	hack/test-differential.sh

scorecard-chain: ## Nightly: the catalogue on every stack of the chain a fleet walks, each compared with the next (STACKS= RUNS=4 PARALLEL=2 SCENARIOS= ARTIFACTS=)
	hack/scorecard-chain.sh

lint: ## gofmt and go vet
	hack/lint.sh

verify: ## lint, go.mod tidiness, and every catalogue scenario validates
	hack/verify.sh

fuzz: ## Fuzz the scenario loader (FUZZTIME, default 60s)
	hack/fuzz.sh

bench: ## Benchmarks, with medians and ratios
	hack/bench.sh

clean: ## Remove bin/faultline and _artifacts/ (CLEAN_KIND=1: the kind node image too; CLEAN_ENVTEST=1: all of bin/)
	hack/clean.sh
