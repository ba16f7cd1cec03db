#!/usr/bin/env bash
# Copies the finished parts of the whole proof into the repo (slimmed), with tables.
set -eu
SRC=${SRC:-/work/wt/s35/proof}  # the steps' OUT
DST=${DST:-$(cd "$(dirname "$0")" && pwd)}
mkdir -p $DST
for w in w1 w2 w3 w4 w5 w6 llmd-shared-prefix sglang-gsp prefix-repetition; do
  [ -f $SRC/$w/summary.json ] || continue
  rm -rf $DST/$w; cp -r $SRC/$w $DST/$w
  [ -f $SRC/capacity-$w.json ] && cp $SRC/capacity-$w.json $DST/
done
for d in capacity-compare capacity-compare-w2 speedup-check; do
  [ -d $SRC/$d ] && { rm -rf $DST/$d; cp -r $SRC/$d $DST/$d; }
done
# w2's capacity target ran into its own folder (so that w1's stayed): one folder here,
# as targets.py reads it
if [ -d $SRC/capacity-compare-w2 ]; then
  cp $SRC/capacity-compare-w2/w2-*.json $DST/capacity-compare/ 2>/dev/null || true
  cp $SRC/capacity-compare-w2/*.md $DST/capacity-compare/README-w2.md 2>/dev/null || true
  rm -rf $DST/capacity-compare-w2
fi
cat $SRC/plans/*.jsonl 2>/dev/null | sort -u > $DST/plan.jsonl || true
[ -f "${STEPS:-}" ] && cp "$STEPS" $DST/steps.sh
# only the proof's own folders: earlier runs' (preliminary/ keeps its per-request files) stay as committed
for w in w1 w2 w3 w4 w5 w6 llmd-shared-prefix sglang-gsp prefix-repetition speedup-check; do
  if [ -d $DST/$w ]; then python3 $(dirname "$0")/../../proof/slim.py $DST/$w >/dev/null; fi
done
python3 $(dirname "$0")/../../proof/targets.py $DST > $DST/targets.md
ws=(); for w in w1 w2 w3 w4 w5 w6 llmd-shared-prefix sglang-gsp prefix-repetition; do [ -f $DST/$w/summary.json ] && ws+=($DST/$w); done
python3 $(dirname "$0")/../../proof/summarize.py "${ws[@]}" > $DST/tables.md
du -sh $DST
