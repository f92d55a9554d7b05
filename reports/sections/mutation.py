"""Mutation testing in the Verification section: per op, how many deliberately broken backward
rules (vjps) the suite caught, which survived, and at which commit, from mutation.json (the full
run, `make mutation`, which merges runs over subsets of ops) and mutation-sample.json (the main
job's sampled run); both written by verification/mutate_vjps.py."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .. import parts as P

FULL = "`make mutation` (python -m verification.mutate_vjps: every mutant of every op)"
ENGINE = "python -m verification.mutate_engine"


def engine_parts(payload: Any) -> list[dict]:
    """Mutation testing of the engine itself (traversal, accumulation, unbroadcast, apply, dtype
    rule, grad mode, saved-array locks), per function, from mutation_engine.json."""
    title = "Mutation testing of the engine: its own code broken on purpose"
    if payload is None:  # not part of the main job (about 15 minutes on 2 cores)
        return [P.note(title, f"Not recorded on this machine: `{ENGINE}` (about 15 minutes) "
                       "writes mutation_engine.json, which this section then shows.")]
    if not isinstance(payload, dict):
        return [P.error(title, "mutation_engine.json is not a JSON object.")]
    mutants = [m for m in payload.get("mutants") or [] if isinstance(m, dict)]
    by_fn: dict[str, list[dict]] = defaultdict(list)
    for m in mutants:
        by_fn[f"{m.get('file', '?')}: {m.get('function', '?')}"].append(m)
    rows = []
    for fn, ms in sorted(by_fn.items()):
        killed = sum(m.get("status") == "killed" for m in ms)
        equivalent = [m for m in ms if m.get("status") != "killed" and m.get("equivalent")]
        open_ = [m for m in ms if m.get("status") != "killed" and not m.get("equivalent")]
        rows.append([fn, P.cell(len(ms), "num"), P.cell(killed, "num"),
                     P.cell(len(equivalent), "num"),
                     P.cell(len(open_), "fail" if open_ else "pass"),
                     "; ".join(f"line {m.get('line')}: {m.get('operator')}" for m in open_)])
    note = (f"{payload.get('killed', '?')} of {payload.get('total', '?')} mutants killed at "
            f"{str(payload.get('commit') or '?')[:7]} ({payload.get('finished', '?')}); every "
            "survivor must be listed as equivalent with the reason it cannot change a result. "
            f"Command: {payload.get('command') or ENGINE}.")
    out = [P.table(title, ["function", "mutants", "killed", "equivalent", "open survivors",
                           "open survivors (line: mutation)"], rows, note=note)]
    eq = [m for m in mutants if m.get("status") != "killed" and m.get("equivalent")]
    if eq:
        out.append(P.table("Engine mutants that survive, and why they are equivalent",
                           ["function", "line", "mutation", "why it cannot change a result"],
                           [[m.get("function"), P.cell(m.get("line"), "num"),
                             m.get("change") or m.get("operator"), m.get("equivalent")]
                            for m in eq], collapsed=True))
    return out


def parts(full: Any, sample: Any, summary: dict) -> list[dict]:
    """The full run's table if there is one, else the main job's sample; the sample's own
    table too when both exist. summary['mutation'] gets the figures of the first one shown."""
    if full is None and sample is None:
        return [P.missing("Mutation testing", "No mutation.json and no mutation-sample.json: no "
                          "mutation run (each backward rule broken in turn) has been recorded; "
                          f"`make report` runs a sample, {FULL} runs them all.")]
    out = []
    if full is not None:
        out += _parts(full, summary, "mutation.json", None)
    if sample is not None:
        out += _parts(sample, summary if full is None else {}, "mutation-sample.json",
                      _sample_of(sample))
    if full is None:
        out.append(P.note("Mutation testing: the full run", f"Only a sample ran (the main job's "
                          f"`--sample`). {FULL} breaks every backward rule in every way listed "
                          "and writes mutation.json, which this section then shows first."))
    return out


def _sample_of(payload: Any) -> dict:
    runs = payload.get("runs") if isinstance(payload, dict) else None
    last = runs[-1] if isinstance(runs, list) and runs and isinstance(runs[-1], dict) else {}
    return last.get("sample") if isinstance(last.get("sample"), dict) else {}


def _parts(payload: Any, summary: dict, name: str, sample: dict | None) -> list[dict]:
    """One row per op: how many broken vjps the suite caught, and what the survivors are."""
    if not isinstance(payload, dict):
        return [P.error("Mutation testing", f"{name} is not a JSON object.")]
    mutants = [m for m in payload.get("mutants") or [] if isinstance(m, dict)]
    table = payload.get("table") if isinstance(payload.get("table"), dict) else {}
    by_op: dict[str, list[dict]] = defaultdict(list)
    for m in mutants:
        by_op[str(m.get("op"))].append(m)
    rows, n_killed, n_survived = [], 0, 0
    for op in sorted(set(by_op) | set(table)):
        ms, t = by_op.get(op, []), table.get(op) if isinstance(table.get(op), dict) else {}
        count = {k: sum(1 for m in ms if _mut_status(m) == k) if ms else int(t.get(k) or 0)
                 for k in ("killed", "survived", "other")}
        n_killed, n_survived = n_killed + count["killed"], n_survived + count["survived"]
        judged = count["killed"] + count["survived"]
        survivors = [f"line {m['line']}: {_mut_desc(m)}" if m.get("line") else _mut_desc(m)
                     for m in ms if _mut_status(m) == "survived"]
        commit = t.get("commit") or next((m.get("commit") for m in ms if m.get("commit")), None)
        rows.append([op, P.cell(sum(count.values()), "num"), P.cell(count["killed"], "num"),
                     P.cell(count["survived"], "fail" if count["survived"] else "num"),
                     P.cell(count["other"], "warn" if count["other"] else "num"),
                     P.cell(f"{count['killed'] / judged:.0%}" if judged else "—",
                            "pass" if judged and not count["survived"] else ""),
                     "; ".join(survivors) or "—", str(commit)[:7] if commit else "?"])
    if not rows:
        return [P.error("Mutation testing", f"{name} has no per-op table or mutant rows.")]
    killed = P.as_float(payload.get("killed"))
    survived = P.as_float(payload.get("survived"))
    killed, survived = (killed, survived) if killed is not None and survived is not None else (
        n_killed, n_survived)
    rate = f"{killed / (killed + survived):.1%}" if killed + survived else "—"
    drawn = (f"a seeded sample of {sample.get('mutants', '?')} of the {sample.get('of', '?')} "
             "mutants, spread over the ops" if sample is not None else "")
    summary["mutation"] = {"rate": rate, "killed": int(killed), "survived": int(survived),
                           "sample": drawn}
    skipped = sorted(set(payload.get("ops") or []) - set(by_op) - set(table))
    took = next((r.get("seconds") for r in reversed(payload.get("runs") or [])
                 if isinstance(r, dict) and r.get("seconds")), None)
    note = ((f"The main job's sampled run: {drawn} (seed {sample.get('seed', '?')})"
             + (f", {P.fmt(took)} s" if took else "") + f"; {FULL} runs them all. "
             if sample is not None else "") +
            f"Kill rate {rate}: {int(killed)} of {int(killed + survived)} mutants caught. Each "
            "mutant breaks one op's backward rule (vjp) in one way, and the op's slice of the "
            "suite must then fail; a survivor is either a test gap or an equivalent mutant "
            "(one that does not change the gradient). Other = timeout or pytest error. Commit = "
            "the commit the row was measured at. Command: "
            f"{payload.get('command', 'python -m verification.mutate_vjps')}.")
    if skipped:
        note += f" No mutants (no backward rule): {', '.join(skipped)}."
    title = "Mutation testing: backward rules broken on purpose" + (
        f" (sample of {sample.get('mutants', '?')} mutants)" if sample is not None else "")
    out = [P.table(title,
                   ["op", "mutants", "killed", "survived", "other", "kill rate",
                    "survivors (line in the op's source: mutation)", "commit"], rows, note=note)]
    runs = [r for r in payload.get("runs") or [] if isinstance(r, dict)]
    if runs and sample is None:
        out.append(P.table("Mutation runs merged into mutation.json", [
            "commit", "finished", "ops", "killed", "survived", "command", "note"],
            [[(str(r.get("commit") or "?")[:7]) + (" (inferred)" if r.get("commit_inferred")
                                                    else ""),
              r.get("finished") or "?", P.cell(len(r.get("ops") or []), "num"),
              P.cell(r.get("killed"), "num"), P.cell(r.get("survived"), "num"),
              r.get("command") or "", _run_note(r)] for r in runs],
            note="A later run replaces the rows of the ops it measured; the table above always "
                 "shows each op's latest run."))
    if mutants:
        out.append(P.table(f"Every mutant ({name})", ["op", "line", "mutation", "status",
                                                     "killed by", "commit"],
                           [[m.get("op"), P.cell(m.get("line"), "num"), _mut_desc(m),
                             P.cell(_mut_status(m), {"killed": "pass", "survived": "fail"}.get(
                                 _mut_status(m), "warn")), m.get("killed_by") or "—",
                             str(m.get("commit") or "?")[:7]] for m in mutants],
                           collapsed=True))
    return out


def _mut_status(m: dict) -> str:
    s = str(m.get("status"))
    return s if s in ("killed", "survived") else "other"


def _mut_desc(m: dict) -> str:
    return str(m.get("desc") or m.get("mutation") or m.get("kind") or "?")


def _run_note(r: dict) -> str:
    bits = [str(r["note"])] if r.get("note") else []
    if r.get("dirty"):
        bits.append("uncommitted changes in: " + ", ".join(r["dirty"]))
    if r.get("commit_at_end"):
        bits.append(f"HEAD moved to {str(r['commit_at_end'])[:7]} during the run")
    return "; ".join(bits)
