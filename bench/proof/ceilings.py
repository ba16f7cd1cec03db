#!/usr/bin/env python3
"""Recomputes a compare folder's reuse ceilings from its summary.json alone.

    bench/proof/ceilings.py DIR [DIR...]        (or a root: every summary.json under it)

Compare runs since the finite-cache ceiling landed (ADR 0021) carry
`reuse_ceiling_finite` and `pooled_lru_hit_rate` in their summary.json. Older
folders do not, and their per-request data was dropped by slim.py, but a
workload is built from its seed alone: this rebuilds each repetition's
workload with `inferrail-bench workload` (seed S+k for repetition k, the
summary's rate, requests, warm-up, speed-up and parameters; no simulators),
with the fleet's cache size from the summary (`replicas` caches of
--num-gpu-blocks-override + --num-cpu-blocks blocks from `sim_args`, 4,096 and
0 by default), and writes DIR/ceilings.json: the medians over repetitions, as
compare's own. It first checks that the rebuilt infinite ceiling equals the
summary's (to 3 decimals), so a workload that changed since the run is caught
rather than silently used. bench/proof/targets.py reads ceilings.json when the
summary has no finite-cache ceiling.

INFERRAIL_BENCH names the binary (default build/inferrail-bench).
"""
import json
import os
import re
import statistics
import subprocess
import sys

BENCH = os.environ.get("INFERRAIL_BENCH", "build/inferrail-bench")


def sim_flag(args, flag, default):
    m = re.search(r"(?:^|\s)" + re.escape(flag) + r"[ =](\S+)", args or "")
    return float(m.group(1)) if m else default


def one(d, seed, cache_blocks, block_size):
    cmd = [BENCH, "workload", "--workload", d["workload"],
           *([] if d.get("trace") else ["--rate", str(d["rate"])]),
           "--requests", str(int(d["requests"])), "--warmup", str(int(d["warmup"])),
           "--seed", str(seed), "--speedup", str(d.get("speedup") or 1),
           "--block-size", str(block_size),
           "--cache-blocks", str(cache_blocks), "--cache-replicas", str(int(d["replicas"]))]
    for k, v in (d.get("params") or {}).items():
        cmd += ["--param", f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}"]
    if d.get("trace"):
        cmd += ["--trace", d["trace"]]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1]), cmd


def folder(path):
    d = json.load(open(os.path.join(path, "summary.json")))
    if "sharegpt" in (d.get("params") or {}):
        return f"{path}: skipped (a ShareGPT file is not committed)"
    blocks = int(sim_flag(d.get("sim_args"), "--num-gpu-blocks-override", 4096)
                 + sim_flag(d.get("sim_args"), "--num-cpu-blocks", 0))
    bs = int(sim_flag(d.get("sim_args"), "--block-size", 16))
    reps = []
    cmd = None
    for k in range(int(d.get("repetitions") or 1)):
        r, c = one(d, int(d["seed"]) + k, blocks, bs)
        cmd = cmd or c
        reps.append(r)
    med = lambda key: round(statistics.median(r[key] for r in reps), 3)
    if d.get("reuse_ceiling") is not None and abs(med("reuse_ceiling") - d["reuse_ceiling"]) > 0.0015:
        return (f"{path}: rebuilt ceiling {med('reuse_ceiling')} != summary's "
                f"{d['reuse_ceiling']}: not written")
    out = {"schema": "inferrail-bench/ceilings/1",
           "reuse_ceiling": med("reuse_ceiling"),
           "reuse_ceiling_finite": med("reuse_ceiling_finite"),
           "pooled_lru_hit_rate": med("pooled_lru_hit_rate"),
           "cache": {"replicas": int(d["replicas"]), "blocks_per_replica": blocks},
           "block_size": bs,
           "repetitions": [{k: r[k] for k in ("reuse_ceiling", "reuse_ceiling_finite",
                                             "pooled_lru_hit_rate")} for r in reps],
           "command": " ".join(cmd[1:]) + "  (seed S+k for repetition k)",
           "how": "bench/proof/ceilings.py: rebuilt from summary.json (no simulators)"}
    with open(os.path.join(path, "ceilings.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    return (f"{path}: ceiling {out['reuse_ceiling']}, finite-cache ceiling "
            f"{out['reuse_ceiling_finite']}, pooled LRU {out['pooled_lru_hit_rate']} "
            f"({out['cache']['replicas']} x {blocks} blocks)")


def main():
    dirs = []
    for a in sys.argv[1:]:
        if os.path.exists(os.path.join(a, "summary.json")):
            dirs.append(a)
        else:
            dirs += sorted(dp for dp, _, fs in os.walk(a) if "summary.json" in fs)
    for p in dirs:
        print(folder(p))


if __name__ == "__main__":
    main()
