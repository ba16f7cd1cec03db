#!/usr/bin/env bash
# Whole proof at 104c368, in steps (plan.jsonl is rewritten per run.sh call; kept per step).
set -u
cd /work/main
export BUILD=/work/wt/s35/bin OUT=/work/wt/s35/proof REPORT=/work/wt/s35/report RECAPACITY=1
mkdir -p $OUT/plans
step() { name=$1; shift; echo "=== $(date -u +%T) step $name start"; "$@"; rc=$?; cp -f $OUT/plan.jsonl $OUT/plans/$name.jsonl 2>/dev/null; echo "=== $(date -u +%T) step $name rc=$rc"; }
for w in w1 sglang-gsp prefix-repetition w5 w6 w3 llmd-shared-prefix; do
  step $w env WORKLOADS=$w KCHECK=0 bench/proof/run.sh
done
step cap-w1 env PROOF=$OUT OUT=$OUT/capacity-compare WORKLOADS=w1 bench/proof/capacity.sh
step w2 env WORKLOADS=w2 KCHECK=0 bench/proof/run.sh
step cap-w2 env PROOF=$OUT OUT=$OUT/capacity-compare-w2 WORKLOADS=w2 bench/proof/capacity.sh
step kcheck env WORKLOADS=" " KCHECK=1 bench/proof/run.sh
step w4 env WORKLOADS=w4 KCHECK=0 bench/proof/run.sh
echo "=== $(date -u +%T) all done"
# Session 35 ended (06:52 UTC) during cap-w2, and its processes with it. Session 36 ran
# the rest with the same binaries (proof2.sh), cap-w2 from the start:
#   step cap-w2 env PROOF=$OUT OUT=$OUT/capacity-compare-w2 WORKLOADS=w2 bench/proof/capacity.sh
#   step w4 env WORKLOADS=w4 KCHECK=0 bench/proof/run.sh
#   step kcheck env WORKLOADS=" " KCHECK=1 bench/proof/run.sh
