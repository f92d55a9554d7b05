#!/usr/bin/env bash
# The regression gate: fail if TARGET's training step is significantly slower than BASE's.
#
#   benchmarks/compare.sh BASE [TARGET=HEAD] [THRESHOLD=0.10] [gate options...]
#   benchmarks/compare.sh HEAD~1 HEAD 0.10 --presets seed gpt2-mini --rounds 16
#
# Runs `python -m benchmarks.gate`: both commits' minitorch (git worktrees) timed in alternating
# rounds by the measurement harness; a config fails only when a Mann-Whitney U test says the
# change is significant (p < 0.05) AND it is at least THRESHOLD slower. Samples taken under
# outside load are retried, then dropped. Exit 0: no regression; 1: regression; 2: error;
# 3: no regression found but not measured reliably (busy machine: rerun when quiet).
# For asv's history of both commits as well, use benchmarks/history.sh BASE~1..TARGET.
set -euo pipefail

if [[ $# -lt 1 ]]; then
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
root=$(git rev-parse --show-toplevel)
cd "$root"
base=$1
target=${2:-HEAD}
threshold=${3:-0.10}
shift $(( $# < 3 ? $# : 3 ))
exec python -m benchmarks.gate "$base" "$target" --threshold "$threshold" "$@"
