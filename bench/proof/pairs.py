#!/usr/bin/env python3
"""Two policies' paired repetitions side by side: their p99 TTFT, how many requests
found every reusable token still cached, and which sessions (prefixes) each put
on each replica.

    bench/proof/pairs.py DIR POLICY_A POLICY_B            # read DIR's repetitions
    bench/proof/pairs.py DIR POLICY_A POLICY_B --csv OUT  # also write OUT/*.csv

DIR holds `<workload>-<policy>-rep<N>.json` files as `inferrail-bench compare`
writes them (before bench/proof/slim.py drops their per-request arrays), or the
compact `.csv` files that --csv writes from them (one line a request: the fields
this script and bench/proof/tail.py's questions need, about 20 KB for 400
requests, small enough to commit). Repetition N of both policies saw the same
arrivals (the same seed), so each line compares like with like.

Per repetition it prints p99 TTFT for both and their ratio; `full`, the requests
whose reusable tokens the engine had all kept (the rest had some evicted since
their prefix's last visit, or were sent where it was not); the client's send lag
at p99, which rises when something else takes the CPU (a disturbed repetition);
and each replica's sessions. On `llmd-shared-prefix` the sessions are the groups, and the replicas'
sets show where each policy placed them.
"""
import csv
import collections
import glob
import json
import os
import re
import sys

from tail import quantile  # bench/proof/tail.py, beside this script

FIELDS = ["i", "session", "replica", "sched_ms", "send_lag_ms", "ttft_ms", "status", "prompt_tokens",
          "cached_tokens", "reusable_tokens", "hdr_cached_tokens"]


def load(path):
    """The requests of one repetition, from its .json or its .csv."""
    if path.endswith(".csv"):
        with open(path) as f:
            rows = list(csv.DictReader(f))
        out = []
        for r in rows:
            d = {}
            for k in FIELDS:
                v = r.get(k, "")
                d[k] = v if k == "replica" else (float(v) if v not in ("", "None") else None)
            out.append(d)
        return out
    reqs = json.load(open(path)).get("requests")
    return reqs if isinstance(reqs, list) else None


def write_csv(path, reqs):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        for r in reqs:
            w.writerow(["" if r.get(k) is None else r.get(k) for k in FIELDS])


def served(reqs):
    return [r for r in reqs if r.get("status") == 200 and r.get("ttft_ms") is not None]


def full(r):
    """Every reusable token was found cached (to the block)."""
    return (r["cached_tokens"] or 0) >= (r["reusable_tokens"] or 0) - 16


def placement(reqs):
    by = collections.defaultdict(set)
    for r in reqs:
        by[r["replica"]].add(int(r["session"]))
    return " ".join(sorted("%s:%s" % (k, ",".join(map(str, sorted(v)))) for k, v in by.items()))


def reps(d, policy):
    out = {}
    for p in glob.glob(os.path.join(d, "*-%s-rep*.*" % policy)):
        m = re.match(r".*-%s-rep(\d+)\.(json|csv)$" % re.escape(policy), p)
        if m and (m.group(1) not in out or p.endswith(".json")):
            out[m.group(1)] = p
    return out


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    d, a, b = argv[1:4]
    out = argv[argv.index("--csv") + 1] if "--csv" in argv else None
    ra, rb = reps(d, a), reps(d, b)
    ratios, behind = [], 0
    print("rep  p99 %s / %s  ratio   full %s / %s   send lag p99" % (a, b, a, b))
    for n in sorted(set(ra) & set(rb), key=int):
        ea, eb = load(ra[n]), load(rb[n])
        if ea is None or eb is None:
            print("%3s  slimmed: no per-request array" % n)
            continue
        if out:
            os.makedirs(out, exist_ok=True)
            for src, rq in ((ra[n], ea), (rb[n], eb)):
                write_csv(os.path.join(out, os.path.basename(src)[:-5] + ".csv"), rq)
        sa, sb = served(ea), served(eb)
        pa, pb = quantile([r["ttft_ms"] for r in sa], .99), quantile([r["ttft_ms"] for r in sb], .99)
        ratios.append(pa / pb)
        behind += pa > pb
        la = quantile([r["send_lag_ms"] or 0 for r in sa], .99)
        lb = quantile([r["send_lag_ms"] or 0 for r in sb], .99)
        print("%3s  %6.1f / %6.1f ms  %5.2f   %4d / %4d of %d / %d   %.2f / %.2f ms" %
              (n, pa, pb, pa / pb, sum(map(full, sa)), sum(map(full, sb)), len(sa), len(sb), la, lb))
        print("     %s: %s" % (a, placement(sa)))
        print("     %s: %s" % (b, placement(sb)))
    if ratios:
        print("%s behind %s on p99 in %d of %d repetitions; median ratio %.2f" %
              (a, b, behind, len(ratios), quantile(ratios, .5)))


if __name__ == "__main__":
    main(sys.argv)
