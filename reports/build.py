"""Render reports/out/index.html from the artifacts that already exist (no test is re-run).

    python -m reports.build --out reports/out [--artifacts DIR] [--runs DIR ...]
        [--include-runs [DIR ...]] [--asv-results DIR]

One self-contained page: Jinja2 (autoescape, StrictUndefined), plotly.js inlined once, images as
data: URIs. A missing or unreadable input becomes a note in its section, never a crash.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from . import figures
from . import parts as P
from .inputs import ROOT, Inputs, expand_runs, relative
from .junit import SuiteResult, read_junit
from .sections import (
    distributed,
    memory,
    performance,
    provenance,
    reliability,
    training,
    verification,
)

TEMPLATES = Path(__file__).parent / "templates"


def environment() -> Environment:
    return Environment(loader=FileSystemLoader(TEMPLATES),
                       autoescape=select_autoescape(["html", "j2"]), undefined=StrictUndefined,
                       trim_blocks=True, lstrip_blocks=True)


def _safe(section_id: str, title: str, fn: Callable[[], dict]) -> dict:
    """Run one section builder; an unexpected error becomes a visible error part."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - one broken input must not take down the page
        print(f"reports.build: section {section_id} failed: {type(e).__name__}: {e}",
              file=sys.stderr)
        return {"id": section_id, "title": title, "summary": {}, "parts": [
            P.error(title, f"This section could not be built: {type(e).__name__}: {e}"),
            P.pre("Traceback", traceback.format_exc())]}


def read_suites(inputs: Inputs) -> tuple[dict[str, SuiteResult], list[dict]]:
    """JUnit files the main job wrote (junit-<suite>.xml), parsed; problems as error parts."""
    suites, problems = {}, []
    for path in sorted(inputs.artifacts.glob("junit-*.xml")):
        try:
            suite = read_junit(path)
            suites[suite.name] = suite
            inputs.note(path.name, "found", relative(path))
        except ValueError as e:
            inputs.note(path.name, "unreadable", str(e))
            problems.append(P.error(f"Suite results {path.name}", str(e)))
    return suites, problems


def job_section(inputs: Inputs, suites: dict[str, SuiteResult], problems: list[dict]) -> dict:
    """What the main job did: each step's outcome and each suite's pytest counts."""
    job = inputs.json("main_job.json")
    out = list(problems)
    if job is None:
        out.append(P.note("Main job", "No main_job.json: this page was built from existing "
                          "artifacts only (`python -m reports.build`), not by `make report`."))
    else:
        steps = job.get("steps", []) if isinstance(job, dict) else []
        rows = [[s.get("name"), P.cell(s.get("status"), _step_class(s.get("status"))),
                 P.cell(s.get("seconds"), "num"), s.get("detail", "")] for s in steps]
        out.append(P.table("Main job steps", ["step", "status", "seconds", "detail"], rows,
                           note=f"Command: {job.get('command', '?')}"))
        for s in steps:
            if s.get("status") == "failed" and s.get("output"):
                out.append(P.pre(f"Output of the failed step: {s.get('name')}", s["output"]))
    if suites:
        rows = []
        for s in suites.values():
            c = s.counts
            bad = c["failed"] + c["error"]
            rows.append([s.name, P.cell(c["passed"], "num"),
                         P.cell(c["failed"], "fail" if c["failed"] else "num"),
                         P.cell(c["error"], "fail" if c["error"] else "num"),
                         c["skipped"], c["xfailed"], P.cell(s.seconds, "num"),
                         P.cell("pass" if not bad else "fail", "pass" if not bad else "fail")])
        out.append(P.table("Test suites (pytest, as run by the main job)",
                           ["suite", "passed", "failed", "errors", "skipped", "xfailed",
                            "seconds", "verdict"], rows))
        fails = [[s.name, t, m] for s in suites.values() for t, m in s.failures]
        if fails:
            out.append(P.table(f"Failing tests ({len(fails)})", ["suite", "test", "message"],
                               fails))
        skips = [[s.name, t, m] for s in suites.values() for t, m in s.skips]
        if skips:
            out.append(P.table(f"Skipped tests ({len(skips)})", ["suite", "test", "reason"],
                               skips, collapsed=True))
    return {"id": "job", "title": "Main job and test suites", "parts": out, "summary": {}}


def _step_class(status: Any) -> str:
    return {"ok": "pass", "failed": "fail", "skipped": "warn"}.get(str(status), "")


def headline(sections: dict[str, dict], suites: dict[str, SuiteResult]) -> dict:
    """The cards at the top: one figure per section, or what is missing."""
    items = []
    ver = sections["verification"]["summary"]
    if ver.get("records"):
        ok = ver["records"] - ver["failed"] - ver["xfailed"]
        items.append(P.card("verification checks passed", f"{ok} / {ver['records']}",
                            "pass" if not ver["failed"] else "fail",
                            f"{ver['failed']} failed, {ver['xfailed']} xfailed (expected); a "
                            "check is one recorded comparison, not a pytest test (Verification "
                            "says how they differ)"))
    else:
        items.append(P.card("verification", "no results", "warn", "verification.json missing"))
    mut = ver.get("mutation")
    if mut:
        items.append(P.card("broken backward rules caught (mutation testing)", mut["rate"], "",
                            f"{mut['killed']} of {mut['killed'] + mut['survived']} mutants"
                            + (f" ({mut['sample']})" if mut.get("sample") else "") +
                            f"; {mut['survived']} survived (listed per op under Verification)"))
    for name, s in suites.items():
        bad = s.counts["failed"] + s.counts["error"]
        items.append(P.card(f"{name} suite", "passed" if not bad else f"{bad} failing",
                            "pass" if not bad else "fail",
                            f"{s.counts['passed']} passed, {s.counts['xfailed']} xfailed"))
    step = sections["performance"]["summary"].get("step_time")
    if step:
        # verdict only on a reliable measurement (issue 14): otherwise the card is marked
        items.append(P.card("training step time vs PyTorch and NumPy", "",
                            "" if step.get("reliable", True) else "warn", step["sub"],
                            lines=step["lines"]))
    else:
        items.append(P.card("speed vs PyTorch", "no results", "warn",
                            "no peer comparison in bench.json"))
    mem = sections["memory"]["summary"]
    slopes = [s for s in mem.get("slopes", []) if s["kind"] == "RSS"]
    normal = [s for s in slopes if not s["control"]]
    if normal:
        first = normal[0]
        sub = f"{first['label']}, least-squares slope after warm-up"
        control = next((s for s in slopes if s["control"]), None)
        if control:
            sub += f"; the leak control grows {control['slope']['text']} MB/step"
        if P.is_number(mem.get("peak_ratio")):
            sub += f"; step peak = {mem['peak_ratio']:.2f}× the analytic budget"
        items.append(P.card("memory growth per training step (RSS)",
                            _per_step(first["slope"]["text"]), "", sub))
    else:
        items.append(P.card("memory", "no series", "warn", "memory.json missing"))
    # the main job's runs only: a run asked for with --include-runs is no headline result
    every = sections["training"]["summary"].get("runs", {})
    runs = {n: r for n, r in every.items() if not r["other"]}
    if runs:
        name, run = next(iter(runs.items()))
        sub = f"after {P.fmt(run['steps'])} steps, {P.fmt(run['n_params'])} parameters"
        scored = [(r["val_loss"], n) for n, r in runs.items() if P.is_number(r["val_loss"])]
        if len(runs) > 1 and scored:
            best = min(scored)
            sub += f"; lowest of {len(runs)} runs: {P.fmt(best[0])} ({best[1]}, see Training)"
        items.append(P.card(f"val loss, run {name}", run["val_loss"], "", sub))
    else:
        others = len(every) - len(runs)
        items.append(P.card("training", "no main-job result", "warn",
                            f"{others} other run(s) shown in Training (--include-runs)" if others
                            else "no finished step of a main-job run (see Training)"))
    return P.cards(items)


def _per_step(mb_text: str) -> str:
    """A slope in MB/step, in KB/step when below 0.1 MB (2.48e-04 MB -> 0.25 KB)."""
    mb = P.as_float(mb_text)
    if mb is None:
        return f"{mb_text} MB/step"
    return f"{mb * 1024:.2g} KB/step" if abs(mb) < 0.1 else f"{mb:.3g} MB/step"


def build_report(out: Path, artifacts: Path | None = None, runs: list[Path] | None = None,
                 asv_results: Path | None = None, include_runs: list[Path] | None = None) -> Path:
    """Write out/index.html from whatever inputs exist; return its path. include_runs: run
    folders (or folders of runs) shown besides the main job's, each marked with its status."""
    inputs = Inputs.discover(artifacts, runs, asv_results, include_runs)
    prov = provenance.collect(inputs)
    suites, problems = read_suites(inputs)
    sections = {
        "verification": _safe("verification", "Verification",
                              lambda: verification.build(inputs, suites)),
        "performance": _safe("performance", "Performance", lambda: performance.build(inputs)),
        "memory": _safe("memory", "Memory", lambda: memory.build(inputs)),
        "training": _safe("training", "Training", lambda: training.build(inputs)),
        **reliability.sections(inputs, _safe),
        **distributed.sections(inputs, _safe),
    }
    job = _safe("job", "Main job and test suites", lambda: job_section(inputs, suites, problems))
    top = _safe("summary", "Summary", lambda: {"id": "summary", "title": "Summary", "summary": {},
                                               "parts": [headline(sections, suites)]})
    order = [top, job, *sections.values()]
    order.append(_safe("provenance", "Provenance", lambda: provenance.build(prov, inputs)))
    html = environment().get_template("index.html.j2").render(
        sections=order, prov=prov, plotly_js=Markup(figures.plotly_js()))
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    path.write_text(html, encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m reports.build", description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("reports/out"), help="output folder")
    ap.add_argument("--artifacts", type=Path, default=None,
                    help="artifacts folder (default $MINITORCH_ARTIFACTS or reports/artifacts)")
    ap.add_argument("--runs", type=Path, nargs="*", default=None,
                    help="training run folders, or folders of runs, to report instead of the "
                         "main job's (default: artifacts/runs/*)")
    ap.add_argument("--include-runs", type=Path, nargs="*", default=None, metavar="DIR",
                    help="also show these run folders, or every folder in these folders of runs, "
                         "each marked with its status (finished, stopped early, no metrics, "
                         "unreadable); given alone: the repository's runs/")
    ap.add_argument("--asv-results", type=Path, default=None,
                    help="asv results_dir (default: from asv.conf.json, else .asv/results)")
    args = ap.parse_args(argv)
    include = args.include_runs
    if include == []:
        include = [ROOT / "runs"]
    for option, paths in (("--runs", args.runs), ("--include-runs", include)):
        for path in paths or []:
            if not path.is_dir():
                ap.error(f"{option}: {path} is not a folder")
    runs = expand_runs(args.runs) if args.runs is not None else None
    path = build_report(args.out, args.artifacts, runs, args.asv_results, include)
    print(path.resolve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
