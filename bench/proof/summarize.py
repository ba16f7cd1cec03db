#!/usr/bin/env python3
"""Markdown tables from `inferrail-bench compare` folders (their summary.json).

    bench/proof/summarize.py DIR [DIR...] > README-part.md

Per workload: each policy's hit rate (from usage), the reuse ceiling and,
where known, the finite-cache ceiling (Belady's MIN over the fleet's caches
pooled, an upper bound for any routing) and pooled LRU (a reference, not a
bound; from the summary or ceilings.json beside it), TTFT
p50/p90/p99 in wall ms and, in model ms (x K), the ratio of p90 and p99 to
round_robin's in the same run, errors, the busiest replica's share of
requests against the mean (max/mean), and the busiest replica's mean number
of requests in flight against the fleet's mean (the w5 target's 1.3); max/mean
requests is each repetition's own, then the median. With several repetitions the summary
holds medians over them (compare's own), and the repetitions' spread of p99 is
shown when the per-repetition files are still there.
"""
import json
import os
import statistics
import sys


def spread(d, pol):
    """min..max of p99 over the repetitions' files, if present."""
    vals = []
    for f in d["policies"][pol].get("runs", []):
        p = os.path.join(d["_dir"], f)
        if os.path.exists(p):
            r = json.load(open(p))
            s = r.get("summary", r)
            t = (s.get("ttft_ms") or {}).get("p99")
            if t is not None:
                vals.append(t)
    return f"{min(vals):.1f}..{max(vals):.1f}" if len(vals) > 1 else ""


def busiest(d, pol):
    """The busiest replica's requests over the mean, per repetition, then the median:
    each repetition's own imbalance (the summary's per_replica holds medians by replica
    name, which hide an imbalance that falls on a different replica in each). From the
    summary's per_replica when the repetitions' files are gone."""
    vals = []
    for f in d["policies"][pol].get("runs", []):
        p = os.path.join(d["_dir"], f)
        if os.path.exists(p):
            r = json.load(open(p))
            per = (r.get("summary", r).get("per_replica") or {})
            counts = list(per.values()) + [0] * (d.get("replicas", len(per)) - len(per))
            if counts and statistics.mean(counts):
                vals.append(max(counts) / statistics.mean(counts))
    if vals:
        return statistics.median(vals)
    per = d["policies"][pol].get("per_replica") or {}
    return (max(per.values()) / statistics.mean(per.values())) if per else float("nan")


def finite(d):
    """(finite-cache ceiling, pooled LRU) from the summary or ceilings.json; None if unknown."""
    src = d
    if d.get("reuse_ceiling_finite") is None:
        p = os.path.join(d["_dir"], "ceilings.json")
        src = json.load(open(p)) if os.path.exists(p) else {}
    if src.get("reuse_ceiling_finite") is None:
        return None
    return src["reuse_ceiling_finite"], src.get("pooled_lru_hit_rate")


def table(path):
    d = json.load(open(path))
    d["_dir"] = os.path.dirname(path)
    k = d.get("speedup") or 1
    pols = d["policies"]
    rr = pols.get("round_robin", {}).get("ttft_ms") or {}
    fin = finite(d)
    out = [f"### `{d['workload']}`: {d['rate']} req/s (model time), K = {k:g}, "
           f"{int(d['requests'])} measured requests after {int(d['warmup'])}, "
           f"{d['repetitions']} repetition(s), seed {d['seed']}, reuse ceiling {d['reuse_ceiling']}"
           + (f", finite-cache ceiling {fin[0]} (pooled LRU {fin[1]}, not a bound)" if fin else ""),
           ""]
    if d.get("sim_args"):
        out += [f"Simulator flags: `{d['sim_args']}`", ""]
    out += ["| policy | hit rate | TTFT p50 | p90 | p99 (wall ms) | p99 range over reps | "
            "p90 / rr | p99 / rr | errors | max/mean requests | max/mean in flight |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p, v in pols.items():
        t = v.get("ttft_ms") or {}
        mm = busiest(d, p)
        r90 = t["p90"] / rr["p90"] if rr.get("p90") and t.get("p90") is not None else float("nan")
        r99 = t["p99"] / rr["p99"] if rr.get("p99") and t.get("p99") is not None else float("nan")
        out.append(f"| {p} | {v.get('hit_rate')} | {t.get('p50')} | {t.get('p90')} | {t.get('p99')} | "
                   f"{spread(d, p)} | {r90:.2f} | {r99:.2f} | {v.get('errors')} | {mm:.2f} | "
                   f"{v.get('in_flight_max_over_mean')} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    for a in sys.argv[1:]:
        print(table(os.path.join(a, "summary.json") if os.path.isdir(a) else a))
