#!/usr/bin/env bash
# Copies the finished parts of a proof run in steps (steps.sh) into the repo, slimmed,
# with targets.md and tables.md.
#   SRC=<the steps' OUT> [DST=<this folder>] [STEPS=<steps script>] collect.sh
set -eu
SRC=${SRC:?SRC: the steps\' OUT folder}
DST=${DST:-$(cd "$(dirname "$0")" && pwd)}
proof=$(cd "$(dirname "$0")/../../proof" && pwd)
WORKLOADS=$(grep -v "^#" "$proof/workloads")
mkdir -p $DST
for w in $WORKLOADS; do
  [ -f $SRC/$w/summary.json ] || continue
  rm -rf $DST/$w; cp -r $SRC/$w $DST/$w
  if [ -f $SRC/capacity-$w.json ]; then cp $SRC/capacity-$w.json $DST/; fi
done
for d in capacity-compare speedup-check; do
  if [ -d $SRC/$d ]; then rm -rf $DST/$d; cp -r $SRC/$d $DST/$d; fi
done
# w2's capacity target ran into its own folder (so that w1's stayed): one folder here,
# as targets.py reads it
if [ -d $SRC/capacity-compare-w2 ]; then
  mkdir -p $DST/capacity-compare
  cp $SRC/capacity-compare-w2/w2-*.json $DST/capacity-compare/
fi
cat $SRC/plans/*.jsonl 2>/dev/null | sort -u > $DST/plan.jsonl || true
if [ -f "${STEPS:-}" ]; then cp "$STEPS" $DST/steps.sh; fi
ws=(); for w in $WORKLOADS; do if [ -f $DST/$w/summary.json ]; then ws+=($DST/$w); fi; done
# only the proof's own folders: earlier runs' (preliminary/ keeps its per-request files)
# stay as committed
for d in "${ws[@]}" $DST/speedup-check; do
  if [ -d $d ]; then python3 $proof/slim.py $d >/dev/null; fi
done
python3 $proof/targets.py $DST > $DST/targets.md
python3 $proof/summarize.py "${ws[@]}" > $DST/tables.md
du -sh $DST
