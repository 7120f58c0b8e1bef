#!/usr/bin/env bash
# Builds a kind node image with no registry: every binary from source through
# the Go module proxy, the rootfs from Debian's packages, the component images
# (kube-apiserver, etcd, ...) made by `docker import` and preloaded into the
# rootfs's containerd. `kind build node-image` cannot be used here: it pulls
# its base image and the component images from registries.
#
# The image is cached as a `docker save` tarball in ~/.cache/faultline/kind
# (outside the checkout: hack/lib.sh's faultline_cache), keyed by
# the versions and by this script and hack/kind-node/: a second run with the
# same key loads the tarball (or finds the image) and does nothing else.
# Needs root (debootstrap, chroot, a throw-away containerd) and a Docker
# engine (hack/docker.sh). Prints the image's tag last.
#
#   KUBE_VERSION        Kubernetes (default 1.35.4, matching k8s.io v0.35)
#   CONTAINERD_VERSION  containerd (default 2.3.1, as kind v0.32's base image)
#   ETCD_VERSION        etcd (default 3.6.16, shared with hack/envtest.sh)
#   COREDNS_VERSION     CoreDNS (default 1.13.1)
#   DEBIAN_SUITE        the rootfs's Debian release (default bookworm)
#   DEBIAN_MIRROR       default: the first URI in the host's apt sources
source "$(dirname "$0")/lib.sh"

kube_version="${KUBE_VERSION:-1.35.4}"
containerd_version="${CONTAINERD_VERSION:-2.3.1}"
etcd_version="${ETCD_VERSION:-3.6.16}"
coredns_version="${COREDNS_VERSION:-1.13.1}"
suite="${DEBIAN_SUITE:-bookworm}"
mirror="${DEBIAN_MIRROR:-$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)}"
mirror="${mirror:-http://deb.debian.org/debian}"

recipe="$(cat hack/kind-image.sh hack/kind-node/* | sha256sum | cut -c1-10)"
key="v${kube_version}-${recipe}"
tag="faultline.dev/kind-node:${key}"
# The saved image by version outside the checkout (hack/lib.sh's
# faultline_cache), so a fresh clone of the same machine loads it.
cache_dir="$(faultline_cache)/kind"
cache="${cache_dir}/node-${key}.tar"
# kind's load balancer image, which kind runs by that name.
kind_dir="$(go list -m -f '{{.Dir}}' sigs.k8s.io/kind)"
lb_image="$(sed -n 's/^const Image = "\(.*\)"$/\1/p' "${kind_dir}/pkg/cluster/internal/loadbalancer/const.go")"

if docker image inspect "${tag}" >/dev/null 2>&1 && docker image inspect "${lb_image}" >/dev/null 2>&1; then
  echo "kind node image up to date (${tag})" >&2
  echo "${tag}"
  exit 0
fi
if [[ -f "${cache}" ]]; then
  docker load -i "${cache}" >&2
  echo "${tag}"
  exit 0
fi

if [[ "$(id -u)" != 0 ]]; then
  echo "hack/kind-image.sh: building the node image needs root (debootstrap, chroot, containerd)" >&2
  exit 1
fi
for tool in debootstrap docker jq; do
  command -v "${tool}" >/dev/null 2>&1 || { echo "hack/kind-image.sh: ${tool} is missing (hack/docker.sh installs docker.io and debootstrap)" >&2; exit 1; }
done

# Stages keep their output under bin/kind/build/<stage>-<versions>/ with a
# stamp, so a failed run resumes where it stopped; the folder goes once the
# image is saved.
build="$(pwd)/bin/kind/build"
mkdir -p "${build}"
started=$(date +%s)
log() { echo "kind-image: [$(( $(date +%s) - started ))s] $*" >&2; }

# go_module DIR makes DIR a throw-away module for a main package of ours.
go_module() {
  mkdir -p "$1"
  printf 'module faultline.dev/kind-image/%s\n\ngo 1.25\n' "$(basename "$1")" >"$1/go.mod"
}

# The rootfs: Debian minbase with what kind's base image installs, and runc
# and the CNI plugins from Debian. debootstrap waits on the network more
# than on the CPU: it runs in the background while Go compiles.
rootfs_tar="${build}/rootfs-${suite}.tar"
if [[ ! -f "${rootfs_tar}" ]]; then
  log "debootstrap ${suite} from ${mirror} (in the background, log: ${build}/debootstrap.log)"
  (
    rootfs="${build}/rootfs"
    rm -rf "${rootfs}"
    debootstrap --variant=minbase \
      --include=systemd,systemd-sysv,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,ca-certificates,procps,runc,containernetworking-plugins,e2fsprogs,jq \
      "${suite}" "${rootfs}" "${mirror}"
    chroot "${rootfs}" apt-get clean
    rm -rf "${rootfs}"/var/lib/apt/lists/* "${rootfs}"/usr/share/doc/* "${rootfs}"/usr/share/man/* "${rootfs}"/usr/share/locale/*
    tar -C "${rootfs}" -cf "${rootfs_tar}.part" .
    mv "${rootfs_tar}.part" "${rootfs_tar}"
    rm -rf "${rootfs}"
  ) >"${build}/debootstrap.log" 2>&1 &
  rootfs_pid=$!
fi

# Kubernetes and containerd (static, without the snapshotters that need
# cgo) through hack/lib.sh's throw-away modules.
kube_cmds=(kubeadm kubelet kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy)
kube_bin="${build}/kube-${kube_version}"
if [[ ! -f "${kube_bin}/.stamp" ]]; then
  log "building Kubernetes v${kube_version}"
  rm -rf "${kube_bin}"
  go_tools_module "${kube_bin}/src" "k8s.io/kubernetes@v${kube_version}" "${kube_cmds[@]/#/k8s.io/kubernetes/cmd/}"
  for cmd in "${kube_cmds[@]}"; do
    (cd "${kube_bin}/src" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "$(kube_ldflags "${kube_version}")" \
      -o "${kube_bin}/${cmd}" "k8s.io/kubernetes/cmd/${cmd}")
  done
  touch "${kube_bin}/.stamp"
fi
containerd_cmds=(containerd containerd-shim-runc-v2 ctr)
containerd_bin="${build}/containerd-${containerd_version}"
if [[ ! -f "${containerd_bin}/.stamp" ]]; then
  log "building containerd v${containerd_version}"
  rm -rf "${containerd_bin}"
  go_tools_module "${containerd_bin}/src" "github.com/containerd/containerd/v2@v${containerd_version}" "${containerd_cmds[@]/#/github.com/containerd/containerd/v2/cmd/}"
  for cmd in "${containerd_cmds[@]}"; do
    (cd "${containerd_bin}/src" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -tags "no_btrfs no_devmapper no_zfs no_aufs" \
      -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=v${containerd_version}" \
      -o "${containerd_bin}/${cmd}" "github.com/containerd/containerd/v2/cmd/${cmd}")
  done
  touch "${containerd_bin}/.stamp"
fi

# etcd: hack/envtest.sh's build (same version, same wrapper).
ETCD_VERSION="${etcd_version}" hack/envtest.sh >&2
etcd_bin="$(ls -d bin/envtest/*-linux-amd64 | head -n 1)/etcd"

# CoreDNS with the plugins kubeadm's Corefile names, not all of them (the
# full set pulls every cloud SDK); pause as a program that waits for a
# signal; the load balancer of clusters with several control planes; the
# policy engine of kind-webhook-denies-system-namespaces; the application
# of spec.workloads.
small_bin="${build}/small-${key}-coredns${coredns_version}"
if [[ ! -f "${small_bin}/.stamp" ]]; then
  log "building coredns v${coredns_version} and pause"
  rm -rf "${small_bin}"
  go_module "${small_bin}/src-coredns"
  sed "/^\/\/go:build ignore/d" hack/kind-node/coredns.go >"${small_bin}/src-coredns/main.go"
  (
    cd "${small_bin}/src-coredns"
    echo "require github.com/coredns/coredns v${coredns_version}" >>go.mod
    GOFLAGS=-mod=mod go mod tidy >/dev/null
    GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${small_bin}/coredns" .
  )
  go_module "${small_bin}/src-envoy"
  sed "/^\/\/go:build ignore/d" hack/kind-node/envoy.go >"${small_bin}/src-envoy/main.go"
  (cd "${small_bin}/src-envoy" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${small_bin}/envoy" .)
  go_module "${small_bin}/src-policy-webhook"
  sed "/^\/\/go:build ignore/d" hack/kind-node/policy-webhook.go >"${small_bin}/src-policy-webhook/main.go"
  (cd "${small_bin}/src-policy-webhook" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${small_bin}/policy-webhook" .)
  go_module "${small_bin}/src-cni-agent"
  sed "/^\/\/go:build ignore/d" hack/kind-node/cni-agent.go >"${small_bin}/src-cni-agent/main.go"
  (cd "${small_bin}/src-cni-agent" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${small_bin}/cni-agent" .)
  go_module "${small_bin}/src-workload"
  sed "/^\/\/go:build ignore/d" hack/kind-node/workload.go >"${small_bin}/src-workload/main.go"
  (cd "${small_bin}/src-workload" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${small_bin}/workload" .)
  go_module "${small_bin}/src-pause"
  sed "/^\/\/go:build ignore/d" hack/kind-node/pause.go >"${small_bin}/src-pause/main.go"
  (cd "${small_bin}/src-pause" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "${small_bin}/pause" .)
  touch "${small_bin}/.stamp"
fi

# The rootfs (started above, beside the Go builds) must be there now.
if [[ -n "${rootfs_pid:-}" ]]; then
  if ! wait "${rootfs_pid}"; then
    echo "hack/kind-image.sh: debootstrap failed; its log:" >&2
    tail -n 30 "${build}/debootstrap.log" >&2
    exit 1
  fi
  log "rootfs ready"
fi

images="${build}/images-${key}"
# The images the node's containerd holds; the load balancer's stays in docker.
node_images=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd coredns pause policy-webhook cni-agent workload)
policy_image=faultline.dev/policy-webhook:v1
cni_agent_image=faultline.dev/cni-agent:v1
workload_image=faultline.dev/workload:v1

# with_libraries ROOT FILE... prints SRC=PATH for each FILE of the rootfs at
# ROOT and for each shared library it links (ldd in a chroot).
with_libraries() {
  local root="$1" file lib; shift
  for file in "$@"; do
    echo "${root}${file}=${file}"
    while read -r lib; do
      echo "${root}${lib}=${lib}"
    done < <(chroot "${root}" ldd "${file}" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
  done
}
kubeadm_images=()
mapfile -t kubeadm_images < <("${kube_bin}/kubeadm" config images list --kubernetes-version "v${kube_version}" 2>/dev/null)
image_for() {
  local name="$1" want
  for want in "${kubeadm_images[@]}"; do
    [[ "${want}" == */"${name}":* ]] && { echo "${want}"; return; }
  done
  echo "hack/kind-image.sh: kubeadm v${kube_version} lists no ${name} image" >&2
  exit 1
}

# component_image NAME TAG ENTRYPOINT FILE... imports a rootfs holding FILEs
# (SRC=PATH copies SRC to PATH; TARGET->PATH makes PATH a link to TARGET) as
# TAG (with no entrypoint when ENTRYPOINT is ""), and saves it to
# ${images}/NAME.tar.
component_image() {
  local name="$1" image="$2" entrypoint="$3"; shift 3
  local dir="${images}/${name}"
  rm -rf "${dir}"
  mkdir -p "${dir}/tmp" "${dir}/etc"
  chmod 1777 "${dir}/tmp"
  local file
  for file in "$@"; do
    if [[ "${file}" == *"->"* ]]; then
      mkdir -p "${dir}$(dirname "${file##*->}")"
      ln -sf "${file%%->*}" "${dir}${file##*->}"
      continue
    fi
    mkdir -p "${dir}$(dirname "${file##*=}")"
    cp -L "${file%%=*}" "${dir}${file##*=}"
  done
  echo 'root:x:0:0:root:/root:/bin/sh' >"${dir}/etc/passwd"
  echo 'nobody:x:65534:65534:nobody:/:/bin/false' >>"${dir}/etc/passwd"
  local change=()
  if [[ -n "${entrypoint}" ]]; then
    change=(--change "ENTRYPOINT [\"${entrypoint}\"]")
  fi
  # A previous build's image of that name would be left dangling.
  docker rmi "${image}" >/dev/null 2>&1 || true
  tar -C "${dir}" -c . | docker import "${change[@]}" - "${image}" >/dev/null
  docker save -o "${images}/${name}.tar" "${image}"
  rm -rf "${dir}"
}

if [[ ! -f "${images}/.stamp" ]]; then
  log "component images"
  rm -rf "${images}"
  mkdir -p "${images}"
  for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
    component_image "${cmd}" "$(image_for "${cmd}")" "/usr/local/bin/${cmd}" "${kube_bin}/${cmd}=/usr/local/bin/${cmd}"
  done
  component_image etcd "$(image_for etcd)" /usr/local/bin/etcd "${etcd_bin}=/usr/local/bin/etcd"
  component_image coredns "$(image_for coredns)" /coredns "${small_bin}/coredns=/coredns"
  component_image pause "$(image_for pause)" /pause "${small_bin}/pause=/pause"
  component_image policy-webhook "${policy_image}" /policy-webhook "${small_bin}/policy-webhook=/policy-webhook"
  component_image cni-agent "${cni_agent_image}" /cni-agent "${small_bin}/cni-agent=/cni-agent"
  component_image workload "${workload_image}" /workload "${small_bin}/workload=/workload"
  # kube-proxy runs iptables and conntrack: its image takes them from the
  # rootfs with the libraries they link, and iptables' names as links.
  # Files listed twice (a library two tools link) are copied twice.
  proxy_root="${images}/proxy-rootfs"
  mkdir -p "${proxy_root}"
  tar -C "${proxy_root}" -xf "${rootfs_tar}"
  files=("${kube_bin}/kube-proxy=/usr/local/bin/kube-proxy")
  # iptables loads its matches and targets (conntrack, comment, ...) from
  # xtables/ with dlopen, which ldd does not see.
  tools=(/usr/sbin/xtables-nft-multi /usr/sbin/conntrack)
  for ext in "${proxy_root}"/usr/lib/x86_64-linux-gnu/xtables/*.so; do
    tools+=("${ext#"${proxy_root}"}")
  done
  mapfile -t -O "${#files[@]}" files < <(with_libraries "${proxy_root}" "${tools[@]}")
  for name in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    files+=("xtables-nft-multi->/usr/sbin/${name}")
  done
  component_image kube-proxy "$(image_for kube-proxy)" /usr/local/bin/kube-proxy "${files[@]}"
  # kind's load balancer image, run by docker beside the nodes: the Envoy
  # stand-in and the shell tools kind's commands in it use.
  files=("${small_bin}/envoy=/usr/local/bin/envoy")
  mapfile -t -O "${#files[@]}" files < <(with_libraries "${proxy_root}" /usr/bin/bash /usr/bin/dash /usr/bin/mkdir /usr/bin/cp /usr/bin/chmod /usr/bin/mv /usr/bin/sleep /usr/bin/cat)
  files+=("/usr/bin/dash->/bin/sh" "/usr/bin/bash->/bin/bash")
  component_image loadbalancer "${lb_image}" "" "${files[@]}"
  rm -rf "${proxy_root}"
  touch "${images}/.stamp"
fi

# The node: the rootfs with kind's base-image files (from the kind module
# faultline builds against), the binaries, and the component images in
# containerd's store (namespace k8s.io), not unpacked: containerd unpacks an
# image on a node when a pod first uses it.
base="${kind_dir}/images/base/files"
node="${build}/node-${key}"
log "assembling the node rootfs"
rm -rf "${node}"
mkdir -p "${node}"
tar -C "${node}" -xf "${rootfs_tar}"
mkdir -p "${node}/kind/bin" "${node}/kind/manifests" "${node}/etc/kubernetes/manifests" "${node}/opt/cni/bin" "${node}/etc/containerd"
install -m 0755 "${base}"/usr/local/bin/* "${node}/usr/local/bin/"
install -m 0755 "${base}"/kind/bin/* "${node}/kind/bin/"
install -m 0644 "${base}"/etc/crictl.yaml "${node}/etc/"
install -m 0644 "${base}"/etc/default/* "${node}/etc/default/"
install -m 0644 "${base}"/etc/sysctl.d/* "${node}/etc/sysctl.d/"
install -m 0644 "${base}"/etc/systemd/system/*.service "${base}"/etc/systemd/system/*.slice "${node}/etc/systemd/system/"
mkdir -p "${node}/etc/systemd/system/kubelet.service.d"
install -m 0644 "${base}"/etc/systemd/system/kubelet.service.d/* "${node}/etc/systemd/system/kubelet.service.d/"
install -m 0755 hack/kind-node/entrypoint "${node}/usr/local/bin/faultline-entrypoint"
install -m 0644 hack/kind-node/default-storage.yaml "${node}/kind/manifests/default-storage.yaml"
for cmd in kubeadm kubelet kubectl; do install -m 0755 "${kube_bin}/${cmd}" "${node}/usr/bin/"; done
for cmd in containerd containerd-shim-runc-v2 ctr; do install -m 0755 "${containerd_bin}/${cmd}" "${node}/usr/local/bin/"; done
cp -a "${node}"/usr/lib/cni/. "${node}/opt/cni/bin/"
echo "v${kube_version}" >"${node}/kind/version"
sed -e "s#^\([[:space:]]*sandbox_image = \).*#\1\"$(image_for pause)\"#" "${base}/etc/containerd/config.toml" >"${node}/etc/containerd/config.toml"
"${containerd_bin}/ctr" oci spec \
  | jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
  | jq 'del(.process.rlimits)' >"${node}/etc/containerd/cri-base.json"
# What kind's Dockerfile does to systemd, then its units enabled.
find "${node}/lib/systemd/system/sysinit.target.wants/" -name "systemd-tmpfiles-setup.service" -delete
rm -f "${node}"/lib/systemd/system/multi-user.target.wants/* "${node}"/etc/systemd/system/*.wants/* \
  "${node}"/lib/systemd/system/local-fs.target.wants/* "${node}"/lib/systemd/system/sockets.target.wants/*udev* \
  "${node}"/lib/systemd/system/sockets.target.wants/*initctl* "${node}"/lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >>"${node}/etc/systemd/journald.conf"
ln -sf /usr/lib/systemd/systemd "${node}/sbin/init"
chroot "${node}" systemctl enable kubelet.service containerd.service undo-mount-hacks.service >&2
chroot "${node}" systemctl mask systemd-binfmt.service >&2

log "preloading component images"
state="${build}/containerd-state"
rm -rf "${state}"
mkdir -p "${state}"
cat >"${state}/config.toml" <<TOML
version = 3
root = "${node}/var/lib/containerd"
state = "${state}/run"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "${state}/containerd.sock"
TOML
"${containerd_bin}/containerd" --config "${state}/config.toml" >"${state}/containerd.log" 2>&1 &
containerd_pid=$!
trap 'kill "${containerd_pid}" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  "${containerd_bin}/ctr" --address "${state}/containerd.sock" version >/dev/null 2>&1 && break
  # Polling the throw-away containerd's socket: nothing else says it is up.
  sleep 0.1
done
for name in "${node_images[@]}"; do
  "${containerd_bin}/ctr" --address "${state}/containerd.sock" -n k8s.io images import --no-unpack "${images}/${name}.tar" >&2
  # Only the node's containerd keeps it.
  if [[ "${name}" == policy-webhook ]]; then
    docker rmi "${policy_image}" >/dev/null
  elif [[ "${name}" == cni-agent ]]; then
    docker rmi "${cni_agent_image}" >/dev/null
  elif [[ "${name}" == workload ]]; then
    docker rmi "${workload_image}" >/dev/null
  else
    docker rmi "$(image_for "${name}")" >/dev/null
  fi
done
"${containerd_bin}/ctr" --address "${state}/containerd.sock" -n k8s.io images ls -q >&2
kill "${containerd_pid}"
wait "${containerd_pid}" 2>/dev/null || true
trap - EXIT
rm -rf "${state}"

log "importing ${tag}"
# docker 20.10's import rejects STOPSIGNAL; faultline stops nodes itself.
tar -C "${node}" -c . | docker import \
  --change 'ENV container=docker' \
  --change 'ENTRYPOINT ["/usr/local/bin/faultline-entrypoint", "/usr/local/bin/entrypoint", "/sbin/init"]' \
  - "${tag}" >&2
mkdir -p "${cache_dir}"
docker save -o "${cache}.part" "${tag}" "${lb_image}"
mv "${cache}.part" "${cache}"
# Older keys' tarballs and images of this Kubernetes version are stale;
# another version's are not (a rollout's real nodes need two).
find "${cache_dir}" -maxdepth 1 -name "node-v${kube_version}-*.tar" ! -name "node-${key}.tar" -delete
docker images --format '{{.Repository}}:{{.Tag}}' "${tag%%:*}" | grep "^${tag%%:*}:v${kube_version}-" | grep -vxF "${tag}" | xargs -r docker rmi >/dev/null || true
rm -rf "${node}" "${images}" "${small_bin}"
log "built ${tag} ($(du -h "${cache}" | cut -f1) saved in ${cache})"
echo "${tag}"
