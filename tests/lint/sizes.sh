#!/usr/bin/env bash
# sizes.sh: keeps data out of the repository. A session's submission is refused
# whole past 256 MiB of diffs (one was, and its work was lost), and data that a
# script can make again belongs outside the repos. Fails on any tracked file
# over MAX_FILE_KB, or tracked files adding up to more than MAX_TOTAL_MB.
# Usage: sizes.sh [REPO_ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
MAX_FILE_KB=${MAX_FILE_KB:-2048}
MAX_TOTAL_MB=${MAX_TOTAL_MB:-48}
cd "$root"
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "sizes.sh: not a git checkout, nothing to check"
  exit 0
fi
fails=0 total=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  sz=$(stat -c %s "$f")
  total=$((total + sz))
  if [ "$sz" -gt $((MAX_FILE_KB * 1024)) ]; then
    echo "sizes.sh: $f is $((sz / 1024)) KiB, over $MAX_FILE_KB KiB: keep it out of git (make it from a script)"
    fails=$((fails + 1))
  fi
done < <(git ls-files -z)
if [ "$total" -gt $((MAX_TOTAL_MB * 1024 * 1024)) ]; then
  echo "sizes.sh: tracked files add up to $((total / 1048576)) MiB, over $MAX_TOTAL_MB MiB"
  fails=$((fails + 1))
fi
[ "$fails" = 0 ] && echo "sizes.sh: $(git ls-files | wc -l) files, $((total / 1048576)) MiB, ok"
exit $((fails > 0))
