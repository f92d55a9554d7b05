"""PyTorch's OpInfo database as a peer suite, in the Verification section: how many OpInfos map
to minitorch, each dtype's samples passed / xfailed / unsupported / failed, every exemption with
its reason and the OpInfos with failures, from opinfo.json (written by verification/opinfo.py)."""

from __future__ import annotations

from typing import Any

from .. import parts as P

COMMAND = "`make opinfo` (python -m verification.opinfo)"
STATUSES = ("pass", "xfail", "unsupported", "fail")
DTYPES = ("float64", "float32", "int64", "bool")


def parts(payload: Any) -> list[dict]:
    title = "PyTorch's OpInfo database (torch.testing's op_db) against minitorch"
    if payload is None:
        return [P.note(title, f"Not recorded on this machine: {COMMAND} writes opinfo.json; the "
                       "test suite runs the first samples of each mapped OpInfo.")]
    if not isinstance(payload, dict) or not isinstance(payload.get("ops"), dict):
        return [P.error(title, "opinfo.json is not an OpInfo run (no 'ops' table).")]
    ops = {n: r for n, r in payload["ops"].items() if isinstance(r, dict)}
    totals = payload.get("totals") or {}
    failing = sorted(n for n, r in ops.items()
                     if any((c or {}).get("fail") for c in (r.get("counts") or {}).values()))
    note = (f"{payload.get('mapped', len(ops))} of {payload.get('database', '?')} OpInfos map to "
            f"minitorch; {len(ops)} run here"
            + ("" if payload.get("complete") else " (not the complete database)")
            + f", {payload.get('seconds', '?')} s. Not in minitorch's API: "
            + ", ".join(f"{k} {v}" for k, v in (payload.get("not_in_api") or {}).items()) + ".")
    rows = []
    for d in [d for d in DTYPES if d in totals] + sorted(set(totals) - set(DTYPES)):
        c = totals[d] or {}
        rows.append([d, *(P.cell(c.get(s, 0), "fail" if s == "fail" and c.get(s) else "num")
                          for s in STATUSES)])
    out = [P.table(title, ["dtype", *STATUSES], rows, note=note)]
    xfail = payload.get("xfail") or {}
    if xfail:
        out.append(P.table("OpInfo exemptions (strict xfails: each fails the suite once fixed)",
                           ["OpInfo[:dtype]", "reason", "samples xfailed"],
                           [[k, v, P.cell(_xfailed(ops, k), "num")]
                            for k, v in sorted(xfail.items())]))
    if failing:
        out.append(P.table("OpInfos with failing samples", ["OpInfo", "target", "first failures"],
                           [[n, ops[n].get("target", ""), "; ".join(ops[n].get("failures", [])[:3])]
                            for n in failing]))
    out.append(P.table("Per OpInfo (samples by dtype: pass/xfail/unsupported/fail)",
                       ["OpInfo", "target", *DTYPES],
                       [[n, r.get("target", ""), *(_counts((r.get("counts") or {}).get(d))
                                                    for d in DTYPES)]
                        for n, r in sorted(ops.items())], collapsed=True))
    return out


def _xfailed(ops: dict, key: str) -> int:
    name, _, dtype = key.partition(":")
    counts = (ops.get(name) or {}).get("counts") or {}
    return sum((c or {}).get("xfail", 0) for d, c in counts.items() if not dtype or d == dtype)


def _counts(c: dict | None) -> str:
    return "" if not c else "/".join(str(c.get(s, 0)) for s in STATUSES)
