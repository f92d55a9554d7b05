"""The reliability table: each fault class the suite inflicts (bad invocations, locked runs,
divergence, damaged checkpoints...), how many cases were tried, how many held, and the promised
outcome. Tests count cases with `fault(...)`; each module's rows are merged into
reliability.json (artifacts.write_json) when the module finishes, replacing that fault class's
previous row, so a partial run keeps the others. Under pytest-xdist each worker writes its own
row per fault class, tagged with the run's id, and a reader sums the rows of one fault class.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

from artifacts import read_json, write_json

ARTIFACT = "reliability.json"
_ROWS: dict[str, dict] = {}  # fault class -> row
# xdist gives every worker of one run the same testrunuid; a plain run gets its own id
_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")


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
    """Merge this process's rows into reliability.json: a fault class's rows from an earlier
    run are replaced, rows of other workers of this run and of other fault classes stay."""
    if not _ROWS:
        return
    old = read_json(ARTIFACT) or {}
    rows = [r for r in old.get("rows", []) if isinstance(r, dict) and "fault" in r
            and not (r["fault"] in _ROWS and (r.get("run") != _RUN
                                              or r.get("worker") == _WORKER))]
    rows += [{**v, "run": _RUN, "worker": _WORKER} for v in _ROWS.values()]
    write_json(ARTIFACT, {"rows": sorted(rows, key=lambda r: (str(r["fault"]),
                                                                    str(r.get("worker"))))})
