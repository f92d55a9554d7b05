"""The reliability table: each fault class the suite inflicts (bad invocations, locked runs,
divergence, damaged checkpoints...), how many cases were tried, how many held, and the promised
outcome. Tests count cases with `fault(...)`; each module's rows are merged into
reliability.json (artifacts.write_json) when the module finishes, replacing that fault class's
previous row, so a partial run keeps the others.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from artifacts import read_json, write_json

ARTIFACT = "reliability.json"
_ROWS: dict[str, dict] = {}  # fault class -> row


@contextlib.contextmanager
def fault(name: str, outcome: str, test: str = "") -> Iterator[None]:
    """Count one case of fault class `name`; it held if the block finishes without raising."""
    row = _ROWS.setdefault(name, {"fault": name, "outcome": outcome, "tried": 0, "held": 0,
                                  "tests": []})
    row["tried"] += 1
    if test and test not in row["tests"]:
        row["tests"].append(test)
    yield
    row["held"] += 1


def publish() -> None:
    """Merge this process's rows into reliability.json (rows of other fault classes stay)."""
    if not _ROWS:
        return
    old = read_json(ARTIFACT) or {}
    rows = {r["fault"]: r for r in old.get("rows", []) if isinstance(r, dict) and "fault" in r}
    rows.update({k: dict(v) for k, v in _ROWS.items()})
    write_json(ARTIFACT, {"rows": sorted(rows.values(), key=lambda r: r["fault"])})
