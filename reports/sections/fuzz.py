"""The random-program fuzzer in the Verification section: how many programs ran (`make fuzz`),
against which engine features, what each op family contributed, the worst agreeing error as a
fraction of its tolerance, and every disagreement with its reproducer, from fuzz.json (written by
verification/program_fuzz.py)."""

from __future__ import annotations

from typing import Any

from .. import parts as P

COMMAND = "`make fuzz` (python -m verification.program_fuzz --programs 100000)"


def parts(payload: Any) -> list[dict]:
    title = "Random programs against PyTorch (graph-level differential testing)"
    if payload is None:
        return [P.note(title, f"Not recorded on this machine: {COMMAND} writes fuzz.json; the "
                       "test suite runs a fixed-seed profile of the same generator.")]
    if not isinstance(payload, dict):
        return [P.error(title, "fuzz.json is not a JSON object.")]
    failures = [f for f in payload.get("failures") or [] if isinstance(f, dict)]
    worst = payload.get("max_error_over_tol") or {}
    done = payload.get("programs")
    note = (f"{done:,} of {payload.get('target_programs', done):,} programs"
            if isinstance(done, int) else "programs: ?")
    if payload.get("complete") is False:
        note += " (run not complete)"
    note += (f"; {len(failures)} disagreement(s) with torch; worst agreeing error / tolerance: "
             + ", ".join(f"{k} {P.as_float(v):.3g}" for k, v in worst.items() if P.as_float(v)
                         is not None)
             + f"; {payload.get('seconds', '?')} s on {payload.get('jobs', '?')} worker(s).")
    rows = [["programs", P.cell(done, "num")],
            ["disagreements", P.cell(len(failures), "fail" if failures else "pass")]]
    rows += [[f"deliberate difference: {k} (README)", P.cell(v, "num")]
             for k, v in (payload.get("deliberate_differences") or {}).items()]
    rows += [[f"both raised: {k}", P.cell(v, "num")]
             for k, v in sorted((payload.get("both_raised") or {}).items())]
    out = [P.table(title, ["what", "count"], rows, note=note)]
    families = payload.get("families") or {}
    if families:
        out.append(P.table("Programs per op family (a program counts in each family it uses)",
                           ["family", "programs"],
                           [[k, P.cell(v, "num")] for k, v in sorted(families.items())],
                           collapsed=True))
    if failures:
        out.append(P.table("Disagreements with torch (minimal reproducers)",
                           ["kind", "reproducer"],
                           [[f.get("signature") or f.get("kind") or "?",
                             f.get("program") or f.get("reproducer") or ""]
                            for f in failures], collapsed=True))
    return out
