"""The OpInfo tier (verification/opinfo.py): every mapped OpInfo of torch's op_db, its first
QUICK samples per dtype here (all samples with `make opinfo`), in torch and in minitorch. A
sample minitorch cannot run by design is counted as unsupported in the record, never skipped; a
listed difference (opinfo.XFAIL) is a strict xfail whose samples all run, so it fails once fixed;
one of some samples only (opinfo.SAMPLE_XFAIL) passes when exactly those still differ.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("expecttest")  # torch's op_db module needs it

from verification import opinfo  # noqa: E402
from verification.opinfo_table import MAPPED, NOT_IN_API  # noqa: E402

pytestmark = pytest.mark.torch
QUICK = 2  # samples per dtype in the default run: ~1,400 samples


def _marks(name: str) -> list:
    reasons = [r for k, r in opinfo.XFAIL.items() if k == name or k.startswith(name + ":")]
    return [pytest.mark.xfail(strict=True, reason="; ".join(reasons))] if reasons else []


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n)) for n in sorted(MAPPED)])
def test_opinfo_samples_match_torch(name, record):
    some = name in opinfo.SAMPLE_XFAIL  # some samples differ by design: those, and only those
    listed = some or any(k == name or k.startswith(name + ":") for k in opinfo.XFAIL)
    row = opinfo.run_opinfo(opinfo.db()[name], name, None if listed else QUICK)
    counts = row["counts"]
    passed = not any(c.get("fail") for c in counts.values())
    xfailed = any(c.get("xfail") for c in counts.values())
    tol = opinfo.tolerances(opinfo.db()[name])
    record("opinfo", name, f"{'all' if listed else QUICK} samples/dtype", None, None,
           {d: tol.get(d) for d in counts}, passed and xfailed == some, counts=counts,
           target=row["target"], failures=row["failures"], xfail=row["xfail"])
    assert sum(sum(c.values()) for c in counts.values()), f"{name}: no samples ran"
    assert passed and xfailed == some, row["failures"] or f"{name}: listed samples ran: {some}"


def test_opinfo_table_lists_every_opinfo():
    """Every OpInfo in the database is mapped or listed as not in the API, never both; every
    reason is one word, and every mapped target exists in minitorch."""
    names = set(opinfo.db())
    assert not set(MAPPED) & set(NOT_IN_API)
    assert names - set(MAPPED) - set(NOT_IN_API) == set(), "OpInfos in neither table"
    assert set(MAPPED) | set(NOT_IN_API) <= names, "stale OpInfo names in the table"
    assert all(r.isalpha() for r in NOT_IN_API.values())
    missing = [n for n, (kind, attr) in MAPPED.items()
               if not hasattr({"torch": opinfo.mt, "F": opinfo.mtF, "method": opinfo.mt.Tensor,
                                "attr": opinfo.mt.Tensor, "swapped": opinfo.mt,
                                "F.swapped": opinfo.mtF}[
                   kind], attr)]
    assert not missing, f"mapped to names minitorch lacks: {missing}"
