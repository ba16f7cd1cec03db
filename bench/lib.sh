# bench/lib.sh: shared helpers for the benchmark scripts (sourced, not run).
# Sets root, B (the build folder), tmp (removed on exit) and pids (killed on exit).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${IR_BUILD:-$root/build}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitup() { for _ in $(seq 200); do curl -sf -o /dev/null "$1" && return 0; sleep 0.05; done; echo "not up: $1" >&2; exit 1; }

# start_sims N [PREFIX...] -- [SIM FLAGS...]: starts N simulators on free ports,
# each command prefixed with PREFIX (e.g. taskset -c 0), and waits until they
# answer. Their ports land in the array sims.
start_sims() {
  local n=$1; shift
  local prefix=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do prefix+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  sims=()
  local i p
  for i in $(seq "$n"); do
    p=$(freeport); sims+=("$p")
    "${prefix[@]}" "$B/inferrail-sim" --port "$p" "$@" 2>/dev/null & pids+=($!)
  done
  for p in "${sims[@]}"; do waitup "http://127.0.0.1:$p/health"; done
}

# gw_yaml FILE PORT ADMIN_PORT CAP [SERVER EXTRAS]: a gateway config for the
# simulators in sims, each capped at CAP requests in flight and pending.
gw_yaml() {
  local f=$1 port=$2 admin=$3 cap=$4 extra=${5:-}
  {
    echo "server: {listen: \"127.0.0.1:$port\", admin_listen: \"127.0.0.1:$admin\"${extra:+, $extra}}"
    echo "models: [{name: inferrail/sim-8b}]"
    echo "replicas:"
    local i=0 p
    for p in "${sims[@]}"; do
      i=$((i + 1))
      echo "  - {id: s$i, url: \"http://127.0.0.1:$p\", max_concurrency: $cap, max_pending: $cap}"
    done
  } > "$f"
}

# CPU seconds (user + system) a process has used so far.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.3f", ($14 + $15) / hz}' "/proc/$1/stat"; }

env_json() {
  echo "{\"bench\":\"env\",\"cores\":$(nproc),\"date\":\"$(date -u +%FT%TZ)\",\"commit\":\"$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)\"$1}"
}
