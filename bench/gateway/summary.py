#!/usr/bin/env python3
"""Summarizes bench/gateway/run.sh's overhead.jsonl as Markdown tables.

Added latency is a proxy's percentile minus the direct percentile measured in
the same round; the table shows the median over rounds. Usage:
  summary.py overhead.jsonl
"""
import json
import statistics
import sys

ORDER = ["relay", "relay-busy", "inferrail-noscrape", "inferrail", "inferrail-busy", "inferrail-obs", "nginx", "haproxy", "haproxy-busy"]


def first_wins(pairs):
    d = {}
    for k, v in pairs:
        d.setdefault(k, v)  # the row's own "bench" key comes first
    return d


def load(path):
    return [json.loads(l, object_pairs_hook=first_wins) for l in open(path) if l.strip()]


def added(rows, pick, targets):
    """{target: (median added p50, median added p99, errors)} over rounds."""
    out = {}
    for t in targets:
        a50, a99, errs = [], [], 0
        for rnd in sorted({r["round"] for r in rows}):
            d = [r for r in rows if r["round"] == rnd and r["target"] == "direct"]
            p = [r for r in rows if r["round"] == rnd and r["target"] == t]
            if not d or not p:
                continue
            d50, d99 = pick(d[0])
            p50, p99 = pick(p[0])
            a50.append(p50 - d50)
            a99.append(p99 - d99)
            errs += p[0]["errors"]
        if a50:
            out[t] = (statistics.median(a50), statistics.median(a99), errs)
    return out


def main():
    rows = load(sys.argv[1])
    targets = [t for t in ORDER if any(r.get("target") == t for r in rows)]
    env = next((r for r in rows if r["bench"] == "env"), {})
    print(f"Commit {env.get('commit', '?')}, {env.get('date', '?')}, {env.get('cores', '?')} cores; "
          f"nginx {env.get('nginx', '?')}, HAProxy {env.get('haproxy', '?')}.")
    print()
    lat = [r for r in rows if r["bench"] == "latency"]
    print("Open loop, added latency in microseconds (proxy minus direct, median of rounds):")
    print()
    print("| proxy | 2,000 req/s p50 | p99 | 5,000 req/s p50 | p99 | errors |")
    print("|---|---|---|---|---|---|")
    by_rate = {
        rate: added([r for r in lat if r["rate"] == rate],
                    lambda r: (r["latency"]["p50"], r["latency"]["p99"]), targets)
        for rate in (2000, 5000)
    }
    for t in targets:
        cells, errs = [], 0
        for rate in (2000, 5000):
            v = by_rate[rate].get(t)
            cells += [f"{v[0]:.0f}", f"{v[1]:.0f}"] if v else ["-", "-"]
            errs += v[2] if v else 0
        print(f"| {t} | " + " | ".join(cells) + f" | {errs} |")
    direct = {rate: statistics.median([r["latency"]["p50"] for r in lat
                                        if r["rate"] == rate and r["target"] == "direct"] or [0])
              for rate in (2000, 5000)}
    print()
    print(f"Direct to a simulator: p50 {direct[2000]:.0f} us at 2,000 req/s, {direct[5000]:.0f} us at 5,000.")
    print()
    ser = [r for r in rows if r["bench"] == "serial"]
    if ser:
        res = added(ser,
                    lambda r: (r["latency_ms"]["p50"] * 1000, r["latency_ms"]["p99"] * 1000), targets)
        d = statistics.median([r["latency_ms"]["p50"] * 1000 for r in ser if r["target"] == "direct"])
        print(f"One connection, one request at a time (direct p50 {d:.0f} us), added microseconds:")
        print()
        print("| proxy | p50 | p99 | errors |")
        print("|---|---|---|---|")
        for t in targets:
            if t in res:
                print(f"| {t} | {res[t][0]:.0f} | {res[t][1]:.0f} | {res[t][2]} |")
        print()
    thr = [r for r in rows if r["bench"] == "throughput"]
    if thr:
        print("Closed loop, 64 connections, 5 s (median of rounds; CPU seconds are the proxy's own):")
        print()
        print("| target | req/s | proxy CPU s | req per proxy CPU second | errors |")
        print("|---|---|---|---|---|")
        for t in ["direct"] + targets:
            rs = [r for r in thr if r["target"] == t]
            if not rs:
                continue
            rps = statistics.median(r["rps"] for r in rs)
            cpus = [r["proxy_cpu_s"] for r in rs if r.get("proxy_cpu_s")]
            cpu = f"{statistics.median(cpus):.2f}" if cpus else "-"
            per = (f"{statistics.median(r['requests'] / r['proxy_cpu_s'] for r in rs):.0f}"
                   if cpus else "-")
            print(f"| {t} | {rps:.0f} | {cpu} | {per} | {sum(r['errors'] for r in rs)} |")
        print()
        print("A busy-polling proxy spends its whole core whatever the load, so its req per CPU "
              "second is its req/s over the run's length.")

if __name__ == "__main__":
    main()
