#!/usr/bin/env bash
# Record asv results for every commit in a range (oldest first), then build the HTML.
#
#   benchmarks/history.sh RANGE [asv run options...]
#   benchmarks/history.sh HEAD~5..HEAD -b TrainStep -a repeat=5
#
# Each commit's minitorch comes from a git worktree under .asv/worktrees; the benchmark code is
# this checkout's (the existing-environment pattern: ASV_PYTHONPATH + --set-commit-hash).
# Commits already recorded are run again (asv overwrites their results). Samples are recorded, so
# the report's history table can test each change for significance. The machine name comes from
# the CPU (python -m benchmarks.machine name). The report (make report-only) draws the history
# offline; `asv publish` output loads its scripts from CDNs.
set -euo pipefail

if [[ $# -lt 1 ]]; then
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
root=$(git rev-parse --show-toplevel)
cd "$root"
range=$1
shift
machine=$(python -m benchmarks.machine register)  # named from the CPU ($ASV_MACHINE wins)
created=()
cleanup() {  # remove the worktrees this run added (results stay in .asv/results)
    for t in "${created[@]}"; do git worktree remove --force "$t" 2>/dev/null || true; done
}
trap cleanup EXIT

commits=$(git rev-list --reverse "$range")
[[ -n "$commits" ]] || { echo "no commits in range $range" >&2; exit 2; }
status=0
for sha in $commits; do
    tree="$root/.asv/worktrees/${sha:0:12}"
    if [[ ! -d "$tree" ]]; then
        git worktree add -q --detach "$tree" "$sha"
        created+=("$tree")
    fi
    echo "== $(git log -1 --format='%h %s' "$sha")"
    ASV_PYTHONPATH="$tree" asv run --python=same --machine "$machine" --set-commit-hash="$sha" \
        --record-samples "$@" || { echo "asv run reported failures at ${sha:0:12}" >&2; status=2; }
done
asv publish >/dev/null && echo "published to .asv/html (asv preview to view)"
exit $status
