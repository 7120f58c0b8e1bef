# Sourced by the bench scripts (hack/bench-lab.sh, hack/bench-jobs.sh): how
# they time a command.

# cpu_run LOG CMD...: runs CMD, its output in LOG, never failing; sets
# cpu_s to the CPU seconds (user + system) it and the children it waited
# for used (kube-apiserver, etcd, the managers), and wall_s to its wall
# seconds: against the cores x the wall, whether the CPU bounds it.
cpu_run() {
  local log="$1" t began
  shift
  t="$(mktemp)" began="$(date +%s)"
  { TIMEFORMAT='%U %S'; time ("$@" >"${log}" 2>&1 || true); } 2>"${t}"
  wall_s=$(($(date +%s) - began))
  cpu_s="$(awk '{ printf "%.0f", $1 + $2 }' "${t}")"
}
