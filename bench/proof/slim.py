#!/usr/bin/env python3
"""Drops the per-request arrays from the proof's per-repetition files.

    bench/proof/slim.py bench/results/cache-aware

Each `<w>-<policy>-rep<N>.json` that `inferrail-bench compare` writes holds
every request's timings (about 350 KB for 600 requests): too much to commit
for 9 workloads x 8 policies x 3 repetitions. This keeps each file's
`summary`, `config` and `workload` and replaces `requests` by its length, so
the repetitions' spread stays readable (bench/proof/summarize.py) while the
charts, which need every request, are drawn before (bench/report). Files
already slimmed are left as they are.
"""
import json
import os
import re
import sys

REP = re.compile(r".*-rep\d+\.json$")


def slim(path):
    d = json.load(open(path))
    if not isinstance(d.get("requests"), list):
        return False
    d["requests_dropped"] = len(d["requests"])
    del d["requests"]
    with open(path + ".tmp", "w") as f:
        json.dump(d, f, indent=1)
    os.replace(path + ".tmp", path)
    return True


def main():
    n = 0
    for root in sys.argv[1:]:
        for dp, _, fs in os.walk(root):
            n += sum(slim(os.path.join(dp, f)) for f in fs if REP.match(f))
    print(f"slim: {n} files")


if __name__ == "__main__":
    main()
