#!/usr/bin/env bash
# Benchmark two commits with asv in the current environment and fail on a regression.
#
#   benchmarks/compare.sh BASE [TARGET] [FACTOR] [asv run options...]
#   benchmarks/compare.sh HEAD~1 HEAD 1.3 -b TrainStep -a repeat=5
#
# The benchmark code comes from this checkout; the minitorch under test comes from a git
# worktree of each commit (asv's existing-environment pattern: ASV_PYTHONPATH + --set-commit-hash,
# since `asv continuous` refuses an existing environment). Results are saved under .asv/results.
# `asv compare` always exits 0, so this script greps its table: any row marked "+" (slower by
# more than FACTOR, statistically significant) makes it exit 1. Exit 2: asv run itself failed.
set -euo pipefail

if [[ $# -lt 1 ]]; then
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
root=$(git rev-parse --show-toplevel)
cd "$root"
base=$(git rev-parse --verify "$1^{commit}")
target=$(git rev-parse --verify "${2:-HEAD}^{commit}")
factor=${3:-1.2}
shift $(( $# < 3 ? $# : 3 ))
machine=${ASV_MACHINE:-$(hostname)}
asv machine --yes --machine "$machine" >/dev/null

created=()
cleanup() {  # remove the worktrees this run added (results stay in .asv/results)
    for t in "${created[@]}"; do git worktree remove --force "$t" 2>/dev/null || true; done
}
trap cleanup EXIT

run_at() {  # run the suite against the minitorch of commit $1
    local sha=$1 tree="$root/.asv/worktrees/${1:0:12}"
    shift
    if [[ ! -d "$tree" ]]; then
        git worktree add -q --detach "$tree" "$sha"
        created+=("$tree")
    fi
    echo "== asv run at ${sha:0:12} (minitorch from $tree)"
    ASV_PYTHONPATH="$tree" asv run --python=same --machine "$machine" --set-commit-hash="$sha" \
        --show-stderr "$@" || { echo "asv run failed at ${sha:0:12}" >&2; exit 2; }
}

run_at "$base" "$@"
run_at "$target" "$@"
out="$root/.asv/compare-${base:0:8}-${target:0:8}.txt"
asv compare --machine "$machine" --factor "$factor" --split "$base" "$target" | tee "$out"
if grep -q '^| *+ ' "$out"; then
    echo "REGRESSION: benchmarks slower than ${factor}x between ${base:0:8} and ${target:0:8}:" >&2
    grep '^| *+ ' "$out" >&2
    exit 1
fi
echo "no benchmark slower than ${factor}x (table: $out)"
