"""Shared fixtures: fixed seeds for every test, and `record`, which collects one result row per
check and merges them into reports/artifacts/verification.json when the session ends. That file
also carries what the report needs to judge coverage (the registry's ops and the spec table's
declared xfails), so the report reads JSON only and never imports this suite."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import minitorch as mt
from artifacts import read_json, write_json

_RECORDS: list[dict] = []


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    mt.manual_seed(0)
    yield


def _finite(x):
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


@pytest.fixture
def record(request):
    """record(check, op, sample, max_abs, max_rel, tol, passed, **extra) -> appends one row.

    `check` names the kind (gradcheck, torch_fwd_f64, model_grad_f64, adam_step, ...), `op` the
    subject (an op name, a parameter name), `tol` the tolerance it was held to.
    """

    def _record(check, op, sample, max_abs, max_rel=None, tol=None, passed=None, **extra):
        _RECORDS.append({
            "check": check, "op": op, "sample": str(sample),
            "max_abs": _finite(float(max_abs)) if max_abs is not None else None,
            "max_rel": _finite(float(max_rel)) if max_rel is not None else None,
            "tol": tol, "status": "pass" if passed else "fail", "test": request.node.nodeid,
            **extra,
        })

    return _record


def pytest_sessionfinish(session, exitstatus):
    """Merge by test: this session's rows replace those of the tests it ran; rows of tests it did
    not run are kept (a `-k` run must not erase the rest), unless their file is gone."""
    if not _RECORDS:
        return
    ran = {item.nodeid for item in session.items}
    root = Path(str(session.config.rootpath))
    old = (read_json("verification.json") or {}).get("records", [])
    kept = [r for r in old if r.get("test") not in ran
            and (root / str(r.get("test", "")).split("::")[0]).is_file()]
    write_json("verification.json", {
        "records": kept + _RECORDS,
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        **registry_summary(),
    })


def registry_summary() -> dict:
    """The ops the report's coverage table compares the records against, and the exemptions the
    spec table declares: {registry: {primitives, composites, non_differentiable},
    declared_xfails: {op: {check or check:sample: reason}}}."""
    from minitorch.engine.registry import COMPOSITES, REGISTRY
    from verification.specs import SPECS

    return {
        "registry": {
            "primitives": sorted(REGISTRY),
            "composites": sorted(COMPOSITES),
            "non_differentiable": sorted(n for n, op in REGISTRY.items()
                                         if not getattr(op, "differentiable", True)),
        },
        "declared_xfails": {name: dict(spec.xfail) for name, spec in sorted(SPECS.items())
                            if spec.xfail},
    }
