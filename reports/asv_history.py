"""Reads asv's stored results (results/<machine>/*.json + benchmarks.json) directly, because
asv's own HTML loads its scripts from CDNs and does not work offline; decides whether a change
between two commits of one machine's series is significant (`change`).

Results from several machines merge by copying their results/<machine>/ folders into one
results folder: every point keeps its machine, and series are never mixed across machines.

Layout (asv 0.6): each result file has commit_hash, date (commit time, ms), params, and
results{benchmark: row}, where row follows result_columns (result, params, version, ...); for a
parametrized benchmark `result` lists one value per point of the product of `params`.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Point:
    commit: str
    date: int  # commit time, ms since the epoch (0 if unknown)
    machine: str
    value: float | None  # None: failed or skipped
    samples: list[float] | None = None  # per-sample values (asv run --record-samples)
    ci: tuple[float, float] | None = None  # asv's 99 % interval (stats_ci_99_a/b)


@dataclass
class AsvHistory:
    meta: dict[str, dict] = field(default_factory=dict)  # benchmarks.json
    series: dict[tuple[str, str], list[Point]] = field(default_factory=dict)  # (bench, params)
    files: int = 0
    problems: list[str] = field(default_factory=list)

    def commits(self) -> list[tuple[int, str]]:
        """(date, commit) of every recorded commit, oldest first."""
        seen = {(p.date, p.commit) for pts in self.series.values() for p in pts}
        return sorted(seen)

    def unit(self, bench: str) -> str:
        return str(self.meta.get(bench, {}).get("unit", ""))

    def param_names(self, bench: str) -> list[str]:
        return list(self.meta.get(bench, {}).get("param_names", []))


def load(results_dir: Path) -> AsvHistory | None:
    """Everything stored under results_dir, or None if the folder does not exist."""
    if not results_dir.is_dir():
        return None
    hist = AsvHistory()
    try:
        hist.meta = json.loads((results_dir / "benchmarks.json").read_text())
    except (OSError, ValueError) as e:
        hist.problems.append(f"benchmarks.json: {e}")
    for machine_dir in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        for path in sorted(machine_dir.glob("*.json")):
            if path.name == "machine.json":
                continue
            try:
                _add_file(hist, machine_dir.name, json.loads(path.read_text()))
                hist.files += 1
            except (OSError, ValueError, TypeError, KeyError, IndexError) as e:
                hist.problems.append(f"{path.name}: {type(e).__name__}: {e}")
    return hist


def _add_file(hist: AsvHistory, machine: str, data: dict[str, Any]) -> None:
    commit = str(data["commit_hash"])
    date = int(data.get("date") or 0)
    columns = data.get("result_columns") or ["result", "params"]
    for bench, row in data["results"].items():
        entry = dict(zip(columns, row, strict=False)) if isinstance(row, list) else {"result": row}
        values = entry.get("result")
        params = entry.get("params") or []
        if not isinstance(values, list):
            values = [values]
        combos = [", ".join(_unquote(v) for v in c) for c in itertools.product(*params)] or [""]
        samples = _per_combo(entry.get("samples"), len(values))
        lo, hi = (_per_combo(entry.get(k), len(values)) for k in ("stats_ci_99_a",
                                                                   "stats_ci_99_b"))
        for i, (combo, value) in enumerate(zip(combos, values, strict=False)):
            v = _num(value)
            s = samples[i] if isinstance(samples[i], list) else None
            s = [x for x in map(_num, s) if x is not None] if s else None
            ci = (lo[i], hi[i]) if _num(lo[i]) is not None and _num(hi[i]) is not None else None
            hist.series.setdefault((bench, combo), []).append(
                Point(commit, date, machine, v, s or None, ci))


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def _per_combo(column: Any, n: int) -> list[Any]:
    """A stats column as one entry per parameter combination (asv stores a list for
    parametrized benchmarks, a bare value otherwise)."""
    if isinstance(column, list) and len(column) == n:
        return column
    return [column if n == 1 else None] * n


# ---------------------------------------------------------------- change detection
# The same rule as benchmarks/stats.py `change` / `change_from_intervals` (reports may not import
# the benchmark suite; benchmarks/tests/test_stats.py runs both on the same series and checks
# they agree): a change is flagged only when it is significant (Mann-Whitney U, p < ALPHA) AND at
# least THRESHOLD in size; with no samples recorded, only when the intervals do not overlap.
THRESHOLD, ALPHA, MIN_SAMPLES = 0.10, 0.05, 5


def mann_whitney_p(a: list[float], b: list[float]) -> float:
    """Two-sided p of the Mann-Whitney U test (normal approximation, tie and continuity
    corrections)."""
    n1, n2 = len(a), len(b)
    if not n1 or not n2:
        return 1.0
    pooled = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    ranks, ties, i = [0.0] * len(pooled), 0.0, 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        ranks[i:j + 1] = [(i + j) / 2 + 1] * (j - i + 1)
        ties += (j - i + 1) ** 3 - (j - i + 1)
        i = j + 1
    u = sum(r for r, (_, g) in zip(ranks, pooled, strict=True) if g == 0) - n1 * (n1 + 1) / 2
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = (abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(var)
    return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))


def change(prev: Point, last: Point, threshold: float = THRESHOLD) -> dict | None:
    """{"ratio", "p", "verdict": slower | faster | same, "test"} between two points of one
    series (same machine), or None when neither samples nor intervals were recorded."""
    if prev.value is None or last.value is None or not prev.value:
        return None
    ratio = last.value / prev.value
    up, down = ratio >= 1 + threshold, ratio <= 1 / (1 + threshold)
    if (prev.samples and last.samples and len(prev.samples) >= MIN_SAMPLES
            and len(last.samples) >= MIN_SAMPLES):
        p = mann_whitney_p(prev.samples, last.samples)
        verdict = "slower" if p < ALPHA and up else "faster" if p < ALPHA and down else "same"
        return {"ratio": ratio, "p": p, "verdict": verdict, "test": "mann-whitney"}
    if prev.ci and last.ci and prev.ci[0] < prev.ci[1] and last.ci[0] < last.ci[1]:
        # (a zero-width interval comes from a single sample, e.g. asv -a repeat=1: no evidence)
        verdict = ("slower" if up and last.ci[0] > prev.ci[1] else
                   "faster" if down and last.ci[1] < prev.ci[0] else "same")
        return {"ratio": ratio, "p": None, "verdict": verdict, "test": "intervals"}
    return None


def _unquote(v: Any) -> str:
    text = str(v)
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text
