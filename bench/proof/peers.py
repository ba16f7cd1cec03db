#!/usr/bin/env python3
"""Our llmd-shared-prefix ratios beside the ones llm-d published.

    bench/proof/peers.py bench/results/cache-aware/llmd-shared-prefix

llm-d's guide reports, for its precise prefix-cache scorer against random
routing on its shared-prefix benchmark: TTFT p90 0.54 s against 92.6 s, and
8,730 against 4,429 output tokens per second. This prints the same two ratios
for every policy of ours against `random` and against `round_robin`, from the
compare summary (TTFT, medians over repetitions) and the per-repetition files
(output tokens per second, median over repetitions). Different hardware,
scale and load: the ratios, not the absolute numbers, are comparable.
"""
import json
import os
import statistics
import sys

LLMD = {"p90": (0.54, 92.6), "tok": (8730.0, 4429.0)}


def out_tok(d, pol):
    vals = []
    for f in d["policies"][pol].get("runs", []):
        p = os.path.join(d["_dir"], f)
        if os.path.exists(p):
            s = json.load(open(p)).get("summary", {})
            if s.get("output_tokens_per_s") is not None:
                vals.append(s["output_tokens_per_s"])
    return statistics.median(vals) if vals else None


def main():
    d = json.load(open(os.path.join(sys.argv[1], "summary.json")))
    d["_dir"] = sys.argv[1]
    pols = d["policies"]
    p90 = {p: (v.get("ttft_ms") or {}).get("p90") for p, v in pols.items()}
    tok = {p: out_tok(d, p) for p in pols}
    print("| policy | TTFT p90 (wall ms) | / random | / round_robin | output tok/s (wall) | / random | / round_robin |")
    print("|---|---|---|---|---|---|---|")
    r = lambda a, b: f"{a / b:.3f}" if a is not None and b else "n/a"
    for p in pols:
        print(f"| {p} | {p90[p]} | {r(p90[p], p90.get('random'))} | {r(p90[p], p90.get('round_robin'))} | "
              f"{tok[p] and round(tok[p], 1)} | {r(tok[p], tok.get('random'))} | {r(tok[p], tok.get('round_robin'))} |")
    a, b = LLMD["p90"]
    c, e = LLMD["tok"]
    print(f"| llm-d precise scorer (published) | {a * 1000:.0f} | {a / b:.3f} | | {c:.0f} | {c / e:.3f} | |")


if __name__ == "__main__":
    main()
