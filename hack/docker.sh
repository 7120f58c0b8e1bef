#!/usr/bin/env bash
# Makes a Docker engine available for the kind provider's tests: installs
# Debian's docker.io (and debootstrap, which hack/kind-image.sh needs) as
# root or through sudo unless they are there, and starts dockerd in the
# background if no engine answers. Its log is bin/dockerd.log. Prints the
# engine's version when it answers.
source "$(dirname "$0")/lib.sh"

sudo=""
if [[ "$(id -u)" != 0 ]]; then
  sudo="sudo"
fi

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if (( ${#need[@]} > 0 )); then
  if [[ -n "${sudo}" ]] && ! command -v sudo >/dev/null 2>&1; then
    echo "hack/docker.sh: ${need[*]} missing and installing needs root or sudo" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  ${sudo} apt-get update -qq >&2
  ${sudo} apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

if ! docker version >/dev/null 2>&1; then
  mkdir -p bin
  # The engine's log goes beside the other built things; dockerd listens on
  # its unix socket only.
  ${sudo} nohup dockerd --host unix:///var/run/docker.sock >bin/dockerd.log 2>&1 &
  for _ in $(seq 1 120); do
    docker version >/dev/null 2>&1 && break
    # Polling the engine's socket: nothing else says when it is up.
    sleep 0.5
  done
  if ! docker version >/dev/null 2>&1; then
    echo "hack/docker.sh: dockerd did not answer within 60s; its log:" >&2
    tail -n 40 bin/dockerd.log >&2
    exit 1
  fi
fi
# Every node container's kubelet, kube-proxy and containerd take inotify
# instances from the host's per-user limit (128 by default): a kind
# cluster and a real-node lab together pass it, and kube-proxy then exits
# with "too many open files". kind's known-issues page gives these values.
for kv in fs.inotify.max_user_instances=512 fs.inotify.max_user_watches=524288; do
  key="${kv%%=*}" want="${kv#*=}"
  have="$(cat "/proc/sys/${key//.//}" 2>/dev/null || echo 0)"
  if (( have < want )); then
    ${sudo} sysctl -q -w "${kv}" >&2 || echo "hack/docker.sh: could not raise ${key} to ${want} (have ${have}); node containers may fail with 'too many open files'" >&2
  fi
done
docker version --format 'docker engine {{.Server.Version}}'
