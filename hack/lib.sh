# Sourced by hack/*.sh: strict mode, repo root, Go on PATH.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="/usr/local/go/bin:${PATH}"
