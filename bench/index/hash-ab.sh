#!/usr/bin/env bash
# Interleaved A/B of the block hash benchmark (`inferrail-indexbench hash`) between
# two builds: on a busy machine only the ratio of runs side by side means
# anything. Prints each build's min and median ns per 16-token block over ROUNDS
# pairs, and the min and median of the per-pair ratios B/A.
#   bench/index/hash-ab.sh A_BINARY B_BINARY [ROUNDS]
# A baseline binary comes from a worktree of the older commit:
#   git worktree add /tmp/base COMMIT && make -C /tmp/base build
#   bench/index/hash-ab.sh /tmp/base/build/inferrail-indexbench build/inferrail-indexbench 15
set -euo pipefail
a=${1:?A binary}
b=${2:?B binary}
rounds=${3:-15}
ns() { "$1" hash | sed -n 's/.*"ns_per_block_min_of_20":\([0-9.]*\).*/\1/p'; }
for ((i = 0; i < rounds; i++)); do
  x=$(ns "$a")
  y=$(ns "$b")
  echo "$x $y"
done | awk '
  function sortv(v, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t } }
  function med(v, n) { return n % 2 ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2 }
  { n++; A[n] = $1; B[n] = $2; R[n] = $2 / $1 }
  END {
    sortv(A, n); sortv(B, n); sortv(R, n)
    printf "{\"bench\":\"hash_ab\",\"rounds\":%d,\"a_min\":%.2f,\"a_median\":%.2f,\"b_min\":%.2f,\"b_median\":%.2f,\"ratio_min\":%.3f,\"ratio_median\":%.3f}\n", n, A[1], med(A, n), B[1], med(B, n), R[1], med(R, n)
  }'
