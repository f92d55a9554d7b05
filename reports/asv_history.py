"""Reads asv's stored results (results/<machine>/*.json + benchmarks.json) directly, because
asv's own HTML loads its scripts from CDNs and does not work offline.

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
        for combo, value in zip(combos, values, strict=False):
            v = value if isinstance(value, (int, float)) and math.isfinite(value) else None
            hist.series.setdefault((bench, combo), []).append(Point(commit, date, machine, v))


def _unquote(v: Any) -> str:
    text = str(v)
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text
