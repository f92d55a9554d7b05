"""Shared fixtures: fixed seeds for every test, and `record`, which collects one result row per
check and writes them all to reports/artifacts/verification.json when the session ends."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import minitorch as mt
from reports.artifacts import write_json

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
    if _RECORDS:
        write_json("verification.json", {
            "records": _RECORDS,
            "python": sys.version.split()[0],
            "numpy": np.__version__,
        })
