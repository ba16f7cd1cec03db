#!/usr/bin/env bash
# Every command the README shows for the three programs uses only options the
# program (or its subcommand) documents in --help, and each such --help exits 0.
set -uo pipefail
BUILD=${IR_BUILD:-build}
ROOT=${IR_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
python3 - "$BUILD" "$ROOT/README.md" <<'PY'
import re, subprocess, sys
build, readme = sys.argv[1], sys.argv[2]
blocks, cur = [], None
for line in open(readme):
    if line.startswith("```"):
        if cur is None:
            cur = [] if line.strip() in ("```", "```sh", "```bash") else False
        else:
            if cur is not False: blocks.append("".join(cur))
            cur = None
    elif cur not in (None, False):
        cur.append(line)
cmds = []
for b in blocks:
    b = b.replace("\\\n", " ")
    for line in b.splitlines():
        line = line.split("#", 1)[0]
        m = re.search(r"(?:build/)?(inferrail-(?:bench|gateway|sim))\s+(.*)", line)
        if m: cmds.append((m.group(1), m.group(2)))
subs = {"inferrail-bench": ["run", "compare", "capacity", "report", "workload", "streams", "soak", "rps", "tokenize-sim"],
        "inferrail-gateway": ["tokenize"]}
fails, n = 0, 0
helps = {}
for prog, args in cmds:
    words = args.split()
    sub = words[0] if words and words[0] in subs.get(prog, []) else None
    key = (prog, sub)
    if key not in helps:
        argv = [f"{build}/{prog}"] + ([sub] if sub else []) + ["--help"]
        p = subprocess.run(argv, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"FAIL: {' '.join(argv[1:])} --help exits {p.returncode}"); fails += 1
        helps[key] = p.stdout + p.stderr
    for flag in re.findall(r"(?<!\S)(--[a-z][a-z0-9-]*)", args):
        n += 1
        if not re.search(re.escape(flag) + r"(?![a-z0-9-])", helps[key]):
            print(f"FAIL: README: {prog} {sub or ''} {flag}: not in its --help"); fails += 1
print(f"{n} options checked in {len(cmds)} commands: {'ok' if not fails else str(fails) + ' failed'}")
sys.exit(1 if fails or n == 0 else 0)
PY
