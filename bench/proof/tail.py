#!/usr/bin/env python3
"""What sets a run's tail: its slowest requests, and how often a prefix moved.

    bench/proof/tail.py RUN.json [RUN.json ...]

RUN.json is one repetition that `inferrail-bench compare` wrote, before
bench/proof/slim.py drops its per-request array. For each file it prints:

- p90 and p99 TTFT, the hit rate, and the p99 a router could reach at best on
  these arrivals: every request with all of its reusable tokens cached (one
  infinite cache) and nothing ahead of it, priced by a prefill model
  a*u + b*u*(c + u/2) + d fitted (least squares) to this run's own requests
  that had nothing ahead of them on their replica;
- the slowest 1% of requests (at least 6): TTFT, prompt, cached and reusable
  tokens, the gateway's prediction for the replica it chose, the replica, and
  how many requests were still in their prefill there when it was sent;
- per session (on w1, a system prompt): how many replicas it was sent to, and
  how many times it moved from the replica its previous request went to.
"""
import collections
import json
import sys


def quantile(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p
    f = int(k)
    c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


def solve(rows, ys):
    """Least squares by the normal equations (3 unknowns, no numpy)."""
    n = len(rows[0])
    a = [[sum(x[i] * x[j] for x in rows) for j in range(n)] +
         [sum(x[i] * y for x, y in zip(rows, ys))] for i in range(n)]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(a[r][i]))
        a[i], a[p] = a[p], a[i]
        if a[i][i] == 0:
            return None
        for r in range(n):
            if r != i:
                f = a[r][i] / a[i][i]
                a[r] = [x - f * y for x, y in zip(a[r], a[i])]
    return [a[i][n] / a[i][i] for i in range(n)]


def features(u, c):
    return [u, u * (c + u / 2.0), 1.0]


def ahead(reqs, r):
    """Requests on r's replica that were still in their prefill when r was sent."""
    t = r["sched_ms"]
    return sum(1 for o in reqs if o is not r and o["replica"] == r["replica"]
               and o["sched_ms"] <= t < o["sched_ms"] + o["ttft_ms"])


def report(path):
    reqs = json.load(open(path))["requests"]
    if not isinstance(reqs, list):
        print(f"{path}: slimmed (no per-request array)")
        return
    reqs = [r for r in reqs if r.get("status") == 200 and r.get("ttft_ms") is not None]
    ttft = [r["ttft_ms"] for r in reqs]
    prompt = sum(r["prompt_tokens"] for r in reqs)
    cached = sum(r["cached_tokens"] or 0 for r in reqs)
    print(f"{path}: {len(reqs)} requests, TTFT p90 {quantile(ttft, 0.9):.1f} ms, "
          f"p99 {quantile(ttft, 0.99):.1f} ms, hit rate {cached / max(prompt, 1):.3f}")
    idle = [r for r in reqs if ahead(reqs, r) == 0]
    coef = solve([features(r["prompt_tokens"] - r["cached_tokens"], r["cached_tokens"])
                  for r in idle], [r["ttft_ms"] for r in idle]) if len(idle) >= 3 else None
    if coef:
        best = []
        for r in reqs:
            c = min(r["reusable_tokens"], r["prompt_tokens"] - 1)
            best.append(sum(a * b for a, b in zip(coef, features(r["prompt_tokens"] - c, c))))
        print(f"  best reachable p99 (all reusable tokens cached, nothing ahead): "
              f"{quantile(best, 0.99):.1f} ms")
    slow = sorted(reqs, key=lambda r: -r["ttft_ms"])[:max(6, len(reqs) // 100)]
    print("  slowest: ttft_ms prompt cached reusable predicted replica ahead")
    for r in slow:
        print(f"    {r['ttft_ms']:7.1f} {r['prompt_tokens']:6d} {r['cached_tokens']:6d} "
              f"{r['reusable_tokens']:6d} {r.get('hdr_cached_tokens') or 0:6d} "
              f"{r['replica']:>8} {ahead(reqs, r):3d}")
    where = collections.defaultdict(set)
    last, moves = {}, 0
    for r in sorted(reqs, key=lambda r: r["sched_ms"]):
        s = r["session"]
        where[s].add(r["replica"])
        moves += s in last and last[s] != r["replica"]
        last[s] = r["replica"]
    pairs = sum(len(v) for v in where.values())
    print(f"  sessions {len(where)}, (session, replica) pairs {pairs}, moves {moves}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        report(p)
