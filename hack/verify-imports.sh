#!/usr/bin/env bash
# The layering each package's doc.go states, checked on what `go list` says
# it imports (tests may import more). A row: a package (a trailing /...
# covers the folder and everything under it), then the faultline packages
# it must not import; a forbidden entry ending in / covers what is under
# it, one without covers that package and what is under it.
source "$(dirname "$0")/lib.sh"
module="$(go list -m)"
rules='
providers                   artifacts cmd framework internal providers/ scenarios session suites
framework/scenario          artifacts cmd framework/engine framework/check providers/ scenarios session suites +providers/lab/labconfig
framework/check             artifacts cmd framework/engine framework/scenario providers/ scenarios session suites
framework/engine            artifacts cmd providers/ scenarios session suites
internal/...                artifacts cmd framework internal/ providers scenarios session suites
providers/vsphere           artifacts cmd framework providers/capi providers/kind providers/lab session providers/fake scenarios suites
providers/capi              artifacts cmd framework providers/kind providers/lab session providers/fake scenarios suites
providers/kind              artifacts cmd framework providers/lab session providers/fake scenarios suites
providers/lab               artifacts cmd framework session providers/fake scenarios suites
providers/lab/management    artifacts cmd framework internal providers/ scenarios session suites +providers/lab/labconfig +providers/capi/versioned +providers/lab/leftovers +internal/regularfile
providers/lab/leftovers     artifacts cmd framework internal providers/ scenarios session suites +internal/regularfile
providers/capi/versioned    artifacts cmd framework internal providers/ scenarios session suites
hack                        artifacts cmd framework internal providers scenarios session suites
providers/lab/nodesim       artifacts cmd framework internal providers/ scenarios session suites +providers/lab/labconfig +providers/lab/workloadapi +providers/lab/vcsim
providers/lab/workloadapi/workloadapitest  artifacts cmd framework internal providers/ scenarios session suites +providers/lab/workloadapi
providers/lab/workloadapi   artifacts cmd framework internal providers/ scenarios session suites +providers/lab/labconfig
providers/lab/vcsim         artifacts cmd framework internal providers/capi providers/kind providers/lab providers/fake scenarios session suites +providers/lab/labconfig
providers/lab/labconfig     artifacts cmd framework internal providers/ scenarios session suites
providers/lab/realnodes     artifacts cmd framework providers/capi providers/lab session providers/fake providers/vsphere scenarios suites +providers/lab/labconfig +providers/lab/vcsim
providers/lab/labtest       artifacts cmd framework/engine framework/check session scenarios suites
providers/fake              artifacts cmd framework providers/ scenarios session suites
artifacts                   cmd providers/ scenarios session suites
session                     cmd suites
scenarios                   artifacts cmd framework internal providers session suites
scenarios/scenariotest      artifacts cmd providers/ session suites
scenarios/selection         artifacts cmd internal providers session suites
suites/...                  cmd
'
forbidden() { # PACKAGE: the forbidden list of its most specific row
  local pkg="$1" best="" bestlen=-1 row p
  while read -r p row; do
    [[ -z "${p}" ]] && continue
    if [[ "${p}" == */... ]]; then
      [[ "${pkg}" == "${p%/...}" || "${pkg}" == "${p%/...}"/* ]] || continue
    else
      [[ "${pkg}" == "${p}" ]] || continue
    fi
    if (( ${#p} > bestlen )); then best="${row}"; bestlen=${#p}; fi
  done <<<"${rules}"
  echo "${best}"
}
listing="$(go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...)" || {
  echo "go list failed: the imports cannot be checked" >&2
  exit 1
}
bad=0
while read -r pkg imports; do
  pkg="${pkg#"${module}"}"; pkg="${pkg#/}"
  for imp in ${imports}; do
    [[ "${imp}" == "${module}"/* ]] || continue
    imp="${imp#"${module}"/}"
    rules_of_pkg="$(forbidden "${pkg}")"
    [[ " ${rules_of_pkg} " == *" +${imp} "* ]] && continue
    for f in ${rules_of_pkg}; do
      [[ "${f}" == +* ]] && continue
      if [[ "${f}" == */ && "${imp}" == "${f}"* ]] || [[ "${f}" != */ && ( "${imp}" == "${f}" || "${imp}" == "${f}"/* ) ]]; then
        echo "${pkg} imports ${imp}, which its doc.go forbids (${f})" >&2
        bad=1
      fi
    done
  done
done <<<"${listing}"
exit "${bad}"
