#!/usr/bin/env bash
# lint, go.mod/go.sum tidiness, and the catalogue validates.
source "$(dirname "$0")/lib.sh"
hack/lint.sh
hack/verify-imports.sh
hack/verify-size.sh
cp go.mod /tmp/faultline-go.mod.bak && cp go.sum /tmp/faultline-go.sum.bak
go mod tidy
if ! diff -q go.mod /tmp/faultline-go.mod.bak >/dev/null || ! diff -q go.sum /tmp/faultline-go.sum.bak >/dev/null; then
  cp /tmp/faultline-go.mod.bak go.mod && cp /tmp/faultline-go.sum.bak go.sum
  echo "go.mod or go.sum is not tidy: run go mod tidy" >&2
  exit 1
fi
# The team's own module (suites/examples/team) requires this one through a
# replace: a dependency added here must be in its go.mod too.
if ! (cd suites/examples/team && go mod tidy -diff >/dev/null); then
  echo "suites/examples/team's go.mod or go.sum is not tidy: run go mod tidy there" >&2
  exit 1
fi
go run ./cmd/faultline validate scenarios/*.yaml
# The CLI reference is generated from the commands' help.
cli_docs="$(mktemp -d)"
go run ./cmd/faultline gen-docs "${cli_docs}"
if ! diff -ru docs/cli "${cli_docs}" >&2; then
  echo "docs/cli is stale: run go run ./cmd/faultline gen-docs docs/cli" >&2
  exit 1
fi
rm -rf "${cli_docs}"
# The scenario format's JSON Schema is generated from the Go types.
if ! go run ./hack/schema | diff -u docs/scenario.schema.json - >&2; then
  echo "docs/scenario.schema.json is stale: run go run ./hack/schema > docs/scenario.schema.json" >&2
  exit 1
fi
# The reference of faults and probes is generated from the vocabulary.
if ! go run ./hack/reference | diff -u docs/reference.md - >&2; then
  echo "docs/reference.md is stale: run go run ./hack/reference > docs/reference.md" >&2
  exit 1
fi
# The embedded lab manifests must come from the versions go.mod requires.
want="$(printf 'sigs.k8s.io/cluster-api %s\nsigs.k8s.io/cluster-api-provider-vsphere %s\n' \
  "$(go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)" "$(go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api-provider-vsphere)")"
if [[ "${want}" != "$(cat providers/lab/management/manifests/VERSIONS)" ]]; then
  echo "providers/lab/management/manifests are not from the versions in go.mod: run hack/lab-manifests.sh" >&2
  exit 1
fi
# docs/architecture.md names every package go list knows.
missing=0
for pkg in $(go list ./... | sed "s#^$(go list -m)/\?##"); do
  [[ -z "${pkg}" || "${pkg}" == hack/* ]] && continue
  name="${pkg}"
  if ! grep -q "${name}" docs/architecture.md; then
    echo "docs/architecture.md does not name package ${pkg}" >&2
    missing=1
  fi
done
(( missing == 0 ))
