#!/usr/bin/env python3
"""Summary of bench/index/ab.sh's JSON lines: per measure, each build's median and range,
and the median (and range) of new/base within each round. Only those ratios mean
something on a busy machine."""
import json
import statistics as st
import sys
from collections import defaultdict


def measures(o):
    if o.get('case') == 'apply':
        k = f"apply {o['blocks_per_event']}-block events, {o['blocks_held']} held, {o['lookup_threads']} lookup threads"
        yield k + ': M block events / CPU s', o['block_events_per_cpu_s'] / 1e6
        if o['lookup_threads']:
            yield k + ': M lookups / s (wall)', o['lookups_per_s'] / 1e6
    elif o.get('bench') == 'lookup':
        yield f"lookup {o['case']}: p50 ns", o['p50_ns']
    elif o.get('bench') == 'memory':
        yield f"approximate {o['case']}: bytes per block", o['bytes_per_block_index']
    elif o.get('case') == 'memory':
        yield 'exact, 1M blocks: bytes per block (index count)', o['bytes_per_block_index']


def main(path):
    d = defaultdict(lambda: defaultdict(dict))
    for line in open(path):
        o = json.loads(line)
        if 'build' not in o:
            print(line.strip())
            continue
        for k, v in measures(o):
            d[k][o.get('rep', 0)][o['build']] = v
    for k, reps in d.items():
        base = [r['base'] for r in reps.values() if 'base' in r]
        new = [r['new'] for r in reps.values() if 'new' in r]
        ratio = [r['new'] / r['base'] for r in reps.values() if r.get('base') and 'new' in r]
        print(f"{k}: base {st.median(base):.2f} [{min(base):.2f}-{max(base):.2f}], "
              f"new {st.median(new):.2f} [{min(new):.2f}-{max(new):.2f}], "
              f"new/base {st.median(ratio):.3f} [{min(ratio):.3f}-{max(ratio):.3f}] over {len(ratio)} rounds")


if __name__ == '__main__':
    main(sys.argv[1])
