#!/usr/bin/env bash
# Installs Debian's chromium for the report's browser test (as root, or
# through sudo), unless it is there already. Prints the binary's path.
source "$(dirname "$0")/lib.sh"
if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { echo "hack/chromium.sh: chromium is missing and installing it needs root or sudo" >&2; exit 1; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  ${sudo} apt-get update -qq >&2
  ${sudo} apt-get install -y -qq --no-install-recommends chromium >&2
fi
command -v chromium
