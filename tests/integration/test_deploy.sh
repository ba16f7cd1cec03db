#!/usr/bin/env bash
# Packaging (issue 12): deploy/ passes its static checks, and they catch a
# missing file, a root image and a bad unit; make install honours PREFIX and
# DESTDIR; LICENSE is MIT.
set -uo pipefail
BUILD=${IR_BUILD:-build}
ROOT=${IR_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0 passes=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { passes=$((passes + 1)); }
check() { IR_BUILD=$BUILD "$ROOT/scripts/check-deploy" >"$T/out" 2>&1; }

check && ok || fail "check-deploy: $(cat "$T/out")"
sed 's|^COPY src/ src/|COPY src-gone/ src/|' "$ROOT/deploy/Dockerfile" >"$T/Dockerfile"
IR_DOCKERFILE=$T/Dockerfile check && fail "a COPY of a missing folder passed" || ok
grep -v '^USER' "$ROOT/deploy/Dockerfile" >"$T/Dockerfile.root"
IR_DOCKERFILE=$T/Dockerfile.root check && fail "a root image passed" || ok
if command -v systemd-analyze >/dev/null; then
  sed 's|^Restart=on-failure|Restart=sometimes|' "$ROOT/deploy/systemd/inferrail-gateway.service" >"$T/bad.service"
  IR_UNIT=$T/bad.service check && fail "a bad unit passed: $(cat "$T/out")" || ok
fi

# make install with PREFIX and DESTDIR (the CMake install rules it runs)
DESTDIR=$T/stage cmake --install "$BUILD" --prefix /opt/ir >"$T/install.log" 2>&1 || fail "install: $(cat "$T/install.log")"
for f in bin/inferrail-gateway bin/inferrail-sim bin/inferrail-bench share/inferrail/inferrail.example.yaml \
  share/doc/inferrail/inferrail-gateway.txt share/doc/inferrail/inferrail-sim.txt share/doc/inferrail/inferrail-bench.txt; do
  [ -s "$T/stage/opt/ir/$f" ] && ok || fail "not installed: /opt/ir/$f"
done
grep -q -- '--config' "$T/stage/opt/ir/share/doc/inferrail/inferrail-gateway.txt" && ok || fail "gateway help text"
"$T/stage/opt/ir/bin/inferrail-gateway" --version >/dev/null && ok || fail "installed gateway does not run"

head -1 "$ROOT/LICENSE" | grep -q 'MIT License' && ok || fail "LICENSE is not MIT"

echo "$passes passed, $fails failed"
[ "$fails" = 0 ]
