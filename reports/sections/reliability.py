"""Reliability: each fault class the suite inflicts (bad invocations, locked and killed runs,
divergence, damaged checkpoints, bad hyperparameters), how many cases were tried and how many
held, from reliability.json (written by verification/reliability.py). Reads JSON only.

The section appears when reliability.json exists (`sections`), so a page built from other
artifacts only is not given an empty box.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import parts as P

ARTIFACT = "reliability.json"


def sections(inputs: Any, safe: Callable[[str, str, Callable[[], dict]], dict]) -> dict:
    """{"reliability": the section, built through build.py's `safe`} if the artifact exists,
    else {} (for `sections = {..., **reliability.sections(inputs, _safe)}`)."""
    if not (inputs.artifacts / ARTIFACT).exists():
        return {}
    return {"reliability": safe("reliability", "Reliability", lambda: build(inputs))}


def build(inputs: Any) -> dict:
    """The section: one table row per fault class (rows of parallel workers summed)."""
    title = "Reliability"
    payload = inputs.json(ARTIFACT)
    summary: dict[str, Any] = {}
    if payload is None:
        part = P.missing(title, "No reliability.json: run `pytest verification/test_cli_errors.py "
                         "verification/test_run_ownership.py verification/test_divergence.py`.")
        return {"id": "reliability", "title": title, "summary": summary, "parts": [part]}
    rows = payload.get("rows") if isinstance(payload, dict) else None
    if not isinstance(rows, list) or not rows:
        part = P.error(title, "reliability.json has no list of rows.")
        return {"id": "reliability", "title": title, "summary": summary, "parts": [part]}
    merged: dict[str, dict] = {}
    for r in rows:
        if not isinstance(r, dict) or "fault" not in r:
            continue
        m = merged.setdefault(str(r["fault"]), {"tried": 0, "held": 0, "outcome": "",
                                                "tests": set()})
        m["tried"] += int(P.as_float(r.get("tried")) or 0)
        m["held"] += int(P.as_float(r.get("held")) or 0)
        m["outcome"] = m["outcome"] or str(r.get("outcome", ""))
        m["tests"].update(str(t) for t in r.get("tests") or [])
    table = []
    for fault, m in sorted(merged.items()):
        ok = m["tried"] > 0 and m["held"] == m["tried"]
        table.append([fault, P.cell(m["tried"], "num"),
                      P.cell(m["held"], "pass" if ok else "fail"), m["outcome"],
                      ", ".join(sorted(m["tests"]))])
    tried = sum(m["tried"] for m in merged.values())
    held = sum(m["held"] for m in merged.values())
    summary.update(tried=tried, held=held, classes=len(merged))
    note = (f"{held} of {tried} cases held across {len(merged)} fault classes. A case is "
            "counted as tried when it starts and as held when every assertion about its "
            "outcome passed; held < tried means a failing test.")
    part = P.table("Faults tried by the suite", ["fault class", "cases tried", "held",
                                                 "promised outcome", "tests"], table, note=note)
    return {"id": "reliability", "title": title, "summary": summary, "parts": [part]}
