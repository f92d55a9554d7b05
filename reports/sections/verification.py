"""Verification section: per-op checks against tolerances, coverage, model, optimizer and resume
parity, from verification.json (the `record` fixture), model_parity.json, optim_parity.json,
mutation.json / mutation-sample.json and the main job's JUnit files."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from .. import figures
from .. import parts as P
from ..inputs import Inputs
from ..junit import SuiteResult
from . import fuzz, mutation, opinfo

_OPTIM = re.compile(r"adam|sgd|optim|clip|sched|momentum|lr")
HOW = "run `make report` (or `python -m pytest verification`) to write it"


OP_CHECKS = ("gradcheck", "forward", "grad_meta", "backward_twice", "needs_grad", "kink",
             "no_graph", "torch", "broadcast", "repeated", "fused")
CHECKS = {  # what each per-op check asserts (verification/test_*.py), by name prefix
    "gradcheck": "the vjp matches float64 central differences (full Jacobian when small, "
                 "random projections otherwise)",
    "forward": "the forward matches the NumPy reference in float64",
    "grad_meta": "each gradient has its input's shape and dtype (float32 and float64)",
    "backward_twice": "a second backward gives identical gradients and leaves inputs untouched",
    "needs_grad": "an input that needs no gradient gets None; the others are unchanged",
    "kink": "the documented gradient at a kink (relu'(0) = 0, max ties split, ...)",
    "no_graph": "a non-differentiable op records no graph",
    "fused_vs_composite": "the fused op equals its composite twin (forward and gradients)",
    "torch_fwd": "forward equals PyTorch's (f32: atol 1e-6, rtol 1e-3; f64: 1e-10)",
    "torch_grad": "gradients equal PyTorch's (f32: atol 1e-4, rtol 1e-3; f64: 1e-10)",
}


def build(inputs: Inputs, suites: dict[str, SuiteResult]) -> dict:
    payload = inputs.json("verification.json")
    reg = registered_ops(payload)
    registered = reg[0] | reg[1] if not isinstance(reg, str) else set()
    declared = declared_xfails(payload)
    records = mark_xfails(_records(payload), suites, declared)
    out: list[dict] = []
    if records:
        out.append(P.note("Checks and tests", checks_vs_tests(len(records),
                                                              suites.get("verification"))
                          + " " + tier(inputs.json("main_job.json"))))
    if payload is None:
        where = inputs.artifacts / "verification.json"
        out.append(P.missing("Per-op checks", f"No verification results: {where} is missing "
                             f"or unreadable; {HOW}."))
    elif not records:
        out.append(P.error("Per-op checks", "verification.json holds no records."))
    groups = _split(records, registered)
    summary = _summary(records, suites.get("verification"))
    if groups["op"]:
        out += _op_parts(groups["op"])
    elif records:
        out.append(P.missing("Per-op checks", "No per-op records (gradcheck, torch parity, ...) "
                             "in verification.json."))
    out += _coverage(groups["op"], reg, non_differentiable(payload))
    out += _xfails(records, suites, declared)
    out += _model_parts(groups["model"], inputs.json("model_parity.json"))
    out += _optim_parts(groups["optim"], inputs.json("optim_parity.json"))
    out += _resume_parts(groups["resume"])
    out += _other_parts(groups["other"])
    out += mutation.parts(inputs.json("mutation.json"), inputs.json("mutation-sample.json"),
                          summary)
    out += mutation.engine_parts(inputs.json("mutation_engine.json"))
    out += fuzz.parts(inputs.json("fuzz.json"))
    out += opinfo.parts(inputs.json("opinfo.json"))
    return {"id": "verification", "title": "Verification", "parts": out, "summary": summary}


def checks_vs_tests(n_checks: int, suite: SuiteResult | None) -> str:
    """Why the page counts checks and tests separately, with both numbers when known."""
    tests = (f"the verification suite ran {sum(suite.counts.values()):,} tests" if suite else
             "the number of tests is not known here (no JUnit file from the main job)")
    return (f"{n_checks:,} checks, and {tests}. A test is one pytest item; a check is one "
            "comparison a test records: one subject (an op, a parameter), one sample, one "
            "property, its error and the tolerance it was held to. One test can record many "
            "checks (model parity records one per parameter gradient), and tests of behaviour "
            "(errors, CLI, checkpoints) record none, so the two counts differ.")


def tier(job: Any) -> str:
    """Which tier of the suites the main job ran: its fast tier unless it was given --full."""
    command = job.get("command") if isinstance(job, dict) else None
    if not isinstance(command, str):
        return "Which tier ran is not known here (no main_job.json)."
    if "--full" in command.split():
        return "The main job ran every tier of the suites (--full), the slow tier included."
    return ("The main job ran the suites' fast tier (pytest -m \"not slow\"): the slow tier "
            "(training runs, MPI jobs, the browser and other tests measured at 1 s or more) was "
            "left out; make report FULL=1 runs it, make test runs everything.")


def _records(payload: Any) -> list[dict]:
    rows = payload.get("records") if isinstance(payload, dict) else payload
    if not isinstance(rows, list):
        return []
    return [r for r in rows if isinstance(r, dict) and "check" in r]


def _key(test_id: str) -> str:
    """One spelling for a pytest node id and a JUnit (classname, name): dotted, no .py."""
    file, sep, rest = test_id.partition("::")
    return file.removesuffix(".py").replace("/", ".") + "." + rest.replace("::", ".")


def declared_xfails(payload: Any) -> dict[str, dict[str, str]] | str:
    """{op: {check or check:sample: reason}} as the suite wrote it into verification.json (from
    verification/specs/), or why it is not there."""
    declared = payload.get("declared_xfails") if isinstance(payload, dict) else None
    if not isinstance(declared, dict):
        return ("verification.json does not list the spec table's declared xfails (written by "
                f"an older suite, or missing); {HOW}")
    return {str(op): {str(k): str(v) for k, v in entries.items()}
            for op, entries in declared.items() if isinstance(entries, dict)}


def mark_xfails(records: list[dict], suites: dict[str, SuiteResult],
                declared: dict[str, dict[str, str]] | str) -> list[dict]:
    """Records of a strict-xfail test are written as failures (the check did fail, as
    expected); show them as xfail, with the reason from JUnit or the spec."""
    expected = {_key(t): reason for s in suites.values() for t, reason in s.xfails}
    out = []
    for r in records:
        reason = expected.get(_key(str(r.get("test", ""))))
        if reason is None and isinstance(declared, dict) and r.get("status") == "fail":
            xf = declared.get(str(r.get("op")), {})
            check = str(r.get("check"))
            for key in (f"{check}:{r.get('sample')}", check, check.rsplit("_", 1)[0]):
                if key in xf:
                    reason = xf[key]
                    break
        out.append({**r, "status": "xfail", "xfail": reason} if reason is not None and
                   r.get("status") == "fail" else r)
    return out


def _split(records: list[dict], registered: set[str]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {"op": [], "model": [], "optim": [], "resume": [],
                                     "other": []}
    for r in records:
        check = str(r.get("check", "")).lower()
        if "resume" in check:
            groups["resume"].append(r)
        elif check.startswith("model"):
            groups["model"].append(r)
        elif _OPTIM.search(check):
            groups["optim"].append(r)
        elif check.startswith(OP_CHECKS) or str(r.get("op")) in registered:
            groups["op"].append(r)
        else:
            groups["other"].append(r)
    return groups


def _summary(records: list[dict], suite: SuiteResult | None) -> dict:
    n_fail = sum(1 for r in records if r.get("status") == "fail")
    n_xfail = sum(1 for r in records if r.get("status") == "xfail")
    return {"records": len(records), "failed": n_fail, "xfailed": n_xfail,
            "suite": dict(suite.counts) if suite else None}


# ---------------------------------------------------------------- per-op table


def _worst(rows: list[dict]) -> dict:
    def top(key: str) -> float | None:
        vals = [P.as_float(r.get(key)) for r in rows]
        vals = [v for v in vals if v is not None]
        return max(vals) if vals else None

    statuses = {str(r.get("status")) for r in rows}
    if "fail" in statuses:
        status = "fail"
    elif statuses == {"pass"}:
        status = "pass"
    else:
        status = "xfail" if statuses <= {"pass", "xfail"} else "/".join(sorted(statuses))
    tols = []
    for r in rows:
        t = P.fmt_tol(r.get("tol"))
        if t not in tols:
            tols.append(t)
    return {"max_abs": top("max_abs"), "max_rel": top("max_rel"), "status": status,
            "tol": "; ".join(tols), "n": len(rows)}


def _status_cell(status: str, text: str = "", title: str = "") -> dict:
    cls = {"pass": "pass", "fail": "fail"}.get(status, "warn")
    mark = {"pass": "✓", "fail": "✗", "xfail": "xfail"}.get(status, "?")
    return P.cell(f"{mark} {text}".strip(), cls, title)


def _op_parts(records: list[dict]) -> list[dict]:
    by: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in records:
        by[(str(r.get("op")), str(r.get("check")))].append(r)
    ops = sorted({k[0] for k in by})
    checks = sorted({k[1] for k in by})
    matrix = []
    for op in ops:
        row: list[Any] = [P.cell(op)]
        for check in checks:
            rows = by.get((op, check))
            if not rows:
                row.append(P.cell("", "none", "not checked"))
                continue
            w = _worst(rows)
            row.append(_status_cell(w["status"], str(w["n"]),
                                    f"max abs {P.fmt(w['max_abs'])}, tol {w['tol']}"))
        matrix.append(row)
    detail = []
    for (op, check), rows in sorted(by.items()):
        w = _worst(rows)
        detail.append([op, check, w["n"], P.cell(w["max_abs"], "num"),
                       P.cell(w["max_rel"], "num"), w["tol"], _status_cell(w["status"])])
    failing = [r for r in records if r.get("status") == "fail"]
    legend = [(c, next((t for k, t in CHECKS.items() if c.startswith(k)), "")) for c in checks]
    out = [P.table("Op × check overview", ["op", *[c.replace("_", " ") for c in checks]], matrix,
                   note="Each cell: pass/fail over all samples and how many samples ran. "
                        "Hover a cell for the worst error and the tolerance. An empty cell: "
                        "the check does not apply (e.g. no gradient for a comparison op).",
                   style="grid"),
           P.kv("What each check asserts", [(c, t or "—") for c, t in legend], collapsed=True)]
    if failing:
        out.append(P.table(f"Failing checks ({len(failing)})",
                           ["op", "check", "sample", "max abs", "max rel", "tolerance", "test"],
                           [[r.get("op"), r.get("check"), r.get("sample"), r.get("max_abs"),
                             r.get("max_rel"), P.fmt_tol(r.get("tol")), r.get("test")]
                            for r in failing]))
    out.append(P.table("Worst error per op and check", ["op", "check", "samples", "max abs error",
                       "max rel error", "tolerance", "verdict"], detail,
                       note="Worst case over the samples of each op (largest error).",
                       collapsed=True))
    out.append(P.table(f"Every sample ({len(records)} records)",
                       ["op", "check", "sample", "max abs", "max rel", "tolerance", "verdict"],
                       [[r.get("op"), r.get("check"), r.get("sample"), P.cell(r.get("max_abs"),
                         "num"), P.cell(r.get("max_rel"), "num"), P.fmt_tol(r.get("tol")),
                         _status_cell(str(r.get("status")))] for r in records],
                       collapsed=True))
    return out


# ---------------------------------------------------------------- coverage and xfails


def _registry(payload: Any) -> dict | None:
    reg = payload.get("registry") if isinstance(payload, dict) else None
    return reg if isinstance(reg, dict) else None


def registered_ops(payload: Any) -> tuple[set[str], set[str]] | str:
    """(primitives, composites) as the suite recorded minitorch's registry, or why not known."""
    reg = _registry(payload)
    if reg is None:
        return ("The registered ops are not known: verification.json does not list them (written "
                f"by an older suite, or missing); {HOW}.")
    return {str(n) for n in reg.get("primitives") or []}, \
        {str(n) for n in reg.get("composites") or []}


def non_differentiable(payload: Any) -> set[str]:
    """Registered ops declared without a gradient (comparisons, argmax), as recorded."""
    reg = _registry(payload) or {}
    return {str(n) for n in reg.get("non_differentiable") or []}


def _coverage(records: list[dict], reg: tuple[set[str], set[str]] | str,
              flat: set[str]) -> list[dict]:
    if isinstance(reg, str):
        return [P.missing("Coverage", reg)]
    prims, comps = reg
    registered = prims | comps
    grad = {str(r.get("op")) for r in records if str(r.get("check")).startswith("gradcheck")}
    missing = registered - grad - flat
    items: list[tuple[str, Any]] = [
        ("registered ops",
         f"{len(registered)} ({len(prims)} primitives + {len(comps)} composites)"),
        ("gradchecked", f"{len(registered & grad)} of {len(registered - flat)} differentiable"),
        ("registered but never gradchecked", ", ".join(sorted(missing)) or "none"),
        ("non-differentiable (no gradient to check; checked for no graph instead)",
         ", ".join(sorted(registered & flat)) or "none"),
        ("gradchecked but not registered (test-only ops)", ", ".join(sorted(grad - registered))
         or "none"),
    ]
    cls = "pass" if not missing else "fail"
    per_check = []
    by_check: dict[str, set[str]] = defaultdict(set)
    for r in records:
        by_check[str(r.get("check"))].add(str(r.get("op")))
    for check, ops in sorted(by_check.items()):
        per_check.append([check, len(ops & registered), ", ".join(sorted(registered - ops))
                          or "none"])
    out = [P.kv("Coverage: registered ops vs gradchecked ops", items,
                note="Registered = minitorch REGISTRY ∪ COMPOSITES when the suite ran; checked "
                     "= ops named in gradcheck records." + ("" if cls == "pass" else
                                                      " Some registered ops have no gradcheck."))]
    if not records:
        out.append(P.missing("Coverage by check", f"No per-op records yet; {HOW}."))
    else:
        out.append(P.table("Coverage by check", ["check", "registered ops covered",
                                                 "registered ops not covered"], per_check,
                           collapsed=True))
    return out


def _xfails(records: list[dict], suites: dict[str, SuiteResult],
            declared: dict[str, dict[str, str]] | str) -> list[dict]:
    rows = []
    seen_tests = set()
    for r in records:
        if r.get("status") == "xfail":
            rows.append([r.get("op"), r.get("check"), r.get("sample"), r.get("xfail") or "",
                         "failed as expected"])
            seen_tests.add(_key(str(r.get("test", ""))))
    for suite in suites.values():
        rows += [[test, "", suite.name, reason, "failed as expected"]
                 for test, reason in suite.xfails if _key(test) not in seen_tests]
    if isinstance(declared, dict):
        for op, entries in sorted(declared.items()):
            for key, reason in entries.items():
                rows.append([op, key, "", reason, "declared in verification/specs/"])
    out = []
    if rows:
        out.append(P.table(f"Expected failures (xfail, {len(rows)} rows)",
                           ["op / test", "check", "sample / suite", "reason", "source"], rows,
                           note="Exemptions are strict xfails declared in the spec table, never "
                                "skips: each must keep failing, and each is listed here."))
    elif suites:
        out.append(P.note("Expected failures (xfail)", "None: no spec declares an xfail and no "
                          "test was marked xfail."))
    else:
        out.append(P.note("Expected failures (xfail)", "No spec declares an xfail. Tests marked "
                          "xfail elsewhere are listed once the main job's JUnit results exist."))
    if isinstance(declared, str) and records:
        out.append(P.missing("Declared xfails", declared))
    return out


# ---------------------------------------------------------------- model, optimizer, resume


def _model_parts(records: list[dict], payload: Any) -> list[dict]:
    out = []
    by_preset: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_preset[str(r.get("preset", "—"))].append(r)
    for preset, rows in sorted(by_preset.items()):
        # model_grad_f64 / model_logits_f64 / model_loss_f64 -> one column "f64" per dtype
        column = {str(r.get("check")): _model_column(str(r.get("check"))) for r in rows}
        checks = sorted(set(column.values()), key=lambda c: ("64" not in c, c))
        names: list[str] = []
        for r in rows:
            if str(r.get("op")) not in names:
                names.append(str(r.get("op")))
        grid: dict[tuple[str, str], dict] = {
            (str(r.get("op")), column[str(r.get("check"))]): r for r in rows}
        body = []
        for name in names:
            line: list[Any] = [name]
            for c in checks:
                r = grid.get((name, c))
                line.append(_status_cell(str(r.get("status")), P.fmt(r.get("max_abs")),
                                         f"tol {P.fmt_tol(r.get('tol'))}, max rel "
                                         f"{P.fmt(r.get('max_rel'))}") if r else P.cell("", "none"))
            body.append(line)
        tols = {c: next((P.fmt_tol(r.get("tol")) for r in rows if column[str(r.get("check"))]
                         == c), "") for c in checks}
        out.append(P.table(f"Full-model parity vs PyTorch: preset {preset}",
                           ["tensor", *[f"{c} max abs error" for c in checks]], body,
                           note="Logits, loss and every parameter gradient, compared by "
                                "parameter name. Tolerances: " + "; ".join(
                                    f"{c}: {t}" for c, t in tols.items()) + "."))
    if payload is not None:
        merged = [{"run": path, **r} for path, rows in P.dict_lists(payload) for r in rows]
        if merged:
            out.append(P.generic_table("model_parity.json: every tensor of every run", merged,
                                       collapsed=bool(out)))
        figs = P.scalars(payload)
        if figs:
            out.append(P.kv("model_parity.json: tolerances and versions", figs[:60],
                            collapsed=True))
    if not out:
        out.append(P.missing("Full-model parity", "No model parity results (records with check "
                             f"model_* or model_parity.json); {HOW}."))
    return out


def _model_column(check: str) -> str:
    """model_grad_f64 -> f64; a check outside that pattern keeps its own column."""
    parts = check.split("_")
    return parts[-1] if len(parts) == 3 and parts[0] == "model" else check


def _step_of(r: dict) -> float | None:
    """The step of an optimizer record: its `step` field, or a number in its sample label."""
    step = P.as_float(r.get("step"))
    if step is not None:
        return step
    sample = str(r.get("sample", ""))
    m = re.search(r"step\D*(\d+)", sample) or re.fullmatch(r"\s*(\d+)\s*", sample)
    return float(m.group(1)) if m else None


def _optim_parts(records: list[dict], payload: Any) -> list[dict]:
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    per_series: dict[str, list[dict]] = defaultdict(list)
    flat: list[dict] = []
    for r in records:
        step, err = _step_of(r), P.as_float(r.get("max_abs"))
        name = " · ".join(str(x) for x in (r.get("check"), r.get("op"), r.get("case")) if x)
        if step is not None and err is not None:
            series[name].append((step, err))
            per_series[name].append(r)
        else:
            flat.append(r)
    tables = []
    if per_series:
        rows = []
        for name, rs in sorted(per_series.items()):
            w = _worst(rs)
            bad = [str(int(_step_of(r) or 0)) for r in rs if r.get("status") == "fail"]
            rows.append([name, w["n"], P.cell(w["max_abs"], "num"), w["tol"],
                         ", ".join(bad) or "none", _status_cell(w["status"])])
        tables.append(P.table("Optimizer parity per run", ["run", "steps", "worst max abs error",
                                                           "tolerance", "failing steps",
                                                           "verdict"], rows))
    if payload is not None:
        if not series:  # per-step error lists inside optim_parity.json (e.g. runs.<case>.max_abs)
            for path, values in P.numeric_series(payload, min_len=2):
                if path.rsplit(".", 1)[-1].lower() in ("max_abs", "max_err", "param_err"):
                    series[path.rsplit(".", 1)[0]] = list(enumerate(values, start=1))
        for path, rows in P.dict_lists(payload):
            tables.append(P.generic_table(f"optim_parity.json {path}".strip(), rows,
                                          collapsed=True))
        figs = [(k, v) for k, v in P.scalars(payload)]
        if figs:
            tables.append(P.kv("optim_parity.json: figures", figs[:80], collapsed=True,
                               note="Schedules, clipping and state_dict checks as the suite wrote "
                                    "them."))
    out = []
    families: dict[str, list] = defaultdict(list)  # Adam/AdamW in one plot, SGD in another
    for n, v in sorted(series.items()):
        family = "Adam / AdamW" if "adam" in n.lower() else (
            "SGD" if "sgd" in n.lower() else "other optimizers")
        families[family].append((n, [p[0] for p in sorted(v)], [p[1] for p in sorted(v)]))
    for family, lines in sorted(families.items()):
        out.append(P.plot(f"Optimizer parity, {family}: max abs parameter error per step "
                          "(log scale)",
                          figures.lines(lines, "step", "max |minitorch − torch|", log_y=True,
                                        markers=True, height=380 + 22 * (len(lines) // 3)),
                          note="minitorch's optimizer vs torch.optim from identical parameters "
                               "and gradients, every step; a zero error (bit-identical) cannot "
                               "be drawn on a log axis."))
    if flat:
        out.append(P.table("Optimizer checks", ["check", "op", "sample", "max abs", "tolerance",
                                                "verdict"],
                           [[r.get("check"), r.get("op"), r.get("sample"), r.get("max_abs"),
                             P.fmt_tol(r.get("tol")), _status_cell(str(r.get("status")))]
                            for r in flat]))
    out += tables
    if not out:
        out.append(P.missing("Optimizer parity", "No optimizer parity results (records with an "
                             f"adam/sgd/clip/schedule check, or optim_parity.json); {HOW}."))
    return out


def _resume_parts(records: list[dict]) -> list[dict]:
    if not records:
        return [P.missing("Resume equivalence", "No resume records (check containing 'resume'); "
                          f"{HOW}.")]
    return [P.table("Resume equivalence", ["check", "subject", "sample", "max abs", "tolerance",
                                           "verdict"],
                    [[r.get("check"), r.get("op"), r.get("sample"), r.get("max_abs"),
                      P.fmt_tol(r.get("tol")), _status_cell(str(r.get("status")))]
                     for r in records],
                    note="N steps in one run vs N/2 steps, checkpoint, resume, N/2 steps.")]


def _other_parts(records: list[dict]) -> list[dict]:
    """Checks that are neither per-op nor model/optimizer/resume (inference, KV cache, BPE...)."""
    if not records:
        return []
    by: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by[str(r.get("check"))].append(r)
    rows = []
    for check, rs in sorted(by.items()):
        for r in rs:
            rows.append([check, r.get("op"), r.get("sample"), P.cell(r.get("max_abs"), "num"),
                         P.fmt_tol(r.get("tol")), _status_cell(str(r.get("status")))])
    return [P.table("Other checks (inference, KV cache, tokenizer, ...)",
                    ["check", "subject", "sample", "max abs", "tolerance", "verdict"], rows,
                    collapsed=len(rows) > 40)]
