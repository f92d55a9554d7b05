"""Memory section: RSS, tracemalloc's heap and memray's heap over the training run, one panel
per question with fitted slopes, the negative controls beside them, peak vs budget and memray's
markers, from memory.json.

The series are found by name inside memory.json (any list of numbers whose path mentions rss,
heap or traced), so the reader follows the memory suite's layout rather than fixing it.
"""

from __future__ import annotations

import math
from statistics import median
from typing import Any

from .. import parts as P
from ..inputs import Inputs
from ..memory_figures import COLORS, Panel, Trace, question_panels

HOW = "run `make report` or `python -m pytest memory` to write it"
_CONTROL = ("leak", "control", "negative", "cyclic", "no_release", "norelease", "broken")
FIT_FROM = 50  # the suite's warm-up: slopes are fitted from this step on
CONTROL_FROM = 5  # controls are drawn as growth from this step on (the suite's exact warm-up)
ENVELOPE = 9  # the suite's running maximum of RSS (its flatness verdict), unless it says otherwise
BIMODAL = ("Why the raw RSS jumps between two levels: RSS counts the pages the process holds, "
           "not the bytes it uses. When a step's graph is freed, glibc returns memory to the OS "
           "only from the top of its heap (and for blocks it had mapped separately), so whether "
           "RSS drops by tens of MB after a step depends on which block happens to sit on top. "
           "The next step takes the pages back. The faded dots are that raw reading; the bold "
           "line, the running maximum over {n} steps, is the level the process has committed, "
           "and it is what the test fits.")


def build(inputs: Inputs) -> dict:
    payload = inputs.json("memory.json")
    summary: dict[str, Any] = {}
    if payload is None:
        return {"id": "memory", "title": "Memory", "summary": summary, "parts": [
            P.missing("RSS and traced heap over training", f"No memory.json; {HOW}."),
            P.missing("Peak vs budget", f"No memory.json; {HOW}.")]}
    out: list[dict] = []
    panels, fits = _panels(payload)
    if panels:
        out.append(P.plot("Memory per training step: one panel per question",
                          question_panels(panels),
                          note=f"Black dashed: least-squares fit of the line listed above it in "
                               f"the legend, from step {FIT_FROM} (after warm-up; the last 5/6 "
                               "of a shorter run) to the end. Normal runs "
                               "must stay flat; the negative controls (drawn as growth since "
                               f"step {CONTROL_FROM}) must grow in every tool that can see them. "
                               + BIMODAL.format(n=ENVELOPE)))
        summary["slopes"] = [{"label": row[0]["text"], "kind": row[0]["kind"],
                              "control": row[0]["control"], "slope": row[3]} for row in fits]
        for row in fits:
            row[0] = P.cell(row[0]["text"], title=row[0]["path"])
        out.append(P.table("Slopes", ["series", "steps", "report's fit window",
                                      "report's slope (MB/step)", "suite's slope (MB/step)",
                                      "suite's verdict", "first → last (MB)"], fits,
                           note="The report fits every series itself; the suite's own slope "
                                "and verdict (its fit window and median test) are shown beside "
                                "it. Green: the normal runs are flat and the controls grow."))
    else:
        out.append(P.missing("RSS and traced heap over training",
                             "memory.json holds no per-step series (lists of numbers named "
                             "rss/heap/traced)."))
    out += _peaks(payload, summary)
    out += _markers(payload)
    figs = [(k, v) for k, v in P.scalars(payload)]
    if figs:
        out.append(P.kv("Every figure the memory suite wrote", figs[:300], collapsed=True,
                        note="As written by the suite (slopes, thresholds, peaks, budgets)."))
    return {"id": "memory", "title": "Memory", "parts": out, "summary": summary}


_RUNS = (("memray_", ""), ("malloc_", ""), ("gc_enabled", "gc on"), ("gc_disabled", "gc off"),
         ("exact", ""), ("rss", "RSS"), ("_", " "))
_METRICS = {"rss_mb": "RSS", "traced_heap_bytes": "live traced heap",
            "traced_peak_bytes": "traced peak", "traced_peak_mb": "traced peak",
            "peak_rss_mb": "peak RSS", "memray_heap_mb": "memray heap",
            "memray_heap_bytes": "memray heap"}


def series_label(path: str) -> str:
    """'series.gc_enabled.rss_mb' -> 'gc on: RSS' (the run, then what was measured)."""
    keys = [k for k in path.split(".") if k not in ("series", "rss", "traced", "values")]
    if not keys:
        return path
    metric = keys[-1]
    for key, text in _METRICS.items():  # peak_rss_mb_gc_enabled -> peak RSS, gc on
        if metric.startswith(key) and metric != key:
            return f"{_run_name(' '.join(keys[:-1]))} {text}, {_run_name(metric[len(key):])}" \
                .strip(" ,")
    run = _run_name(".".join(keys[:-1]))
    what = _METRICS.get(metric, _run_name(metric.removesuffix("_mb")))
    return f"{run}: {what}" if run else what


def _run_name(key: str) -> str:
    for old, new in _RUNS:
        key = key.replace(old, new)
    return " ".join(key.replace(".", " / ").split())


def _kind(path: str) -> str | None:
    """RSS, traced heap, memray heap, malloc in use (glibc's count), or None (step indices,
    per-step differences, anything else), judged by the series' own name, or by its path when
    the name is generic."""
    last = path.rsplit(".", 1)[-1].lower()
    if last in ("step", "steps", "steps_index", "index") or any(
            w in last for w in ("change", "diff", "delta")):
        return None
    name = path.lower() if last in ("values", "series", "mb", "bytes", "data") else last
    if "rss" in name:
        return "RSS"
    if "memray" in name:
        return "memray heap"
    if "malloc" in name:
        return "malloc in use"
    if any(w in name for w in ("heap", "traced", "tracemalloc", "alloc")):
        return "traced heap"
    return None


def _to_mb(path: str, values: list[float]) -> list[float]:
    p = path.lower()
    finite = [v for v in values if math.isfinite(v)]
    if "mb" in p or "mib" in p:
        return values
    if "kb" in p or "kib" in p:
        return [v / 1024 for v in values]
    if "byte" in p or (finite and median(finite) > 1e5):
        return [v / 2**20 for v in values]
    return values


def _steps_for(payload: Any, path: str, n: int) -> list[float]:
    """A sibling list named step/steps of the same length, else 0..n-1."""
    parent = path.rsplit(".", 1)[0] if "." in path else ""
    for other, values in P.numeric_series(payload):
        last = other.rsplit(".", 1)[-1].lower()
        other_parent = other.rsplit(".", 1)[0] if "." in other else ""
        if last in ("step", "steps") and other_parent == parent and len(values) == n:
            return values
    return [float(i) for i in range(n)]


def fit_slope(xs: list[float], ys: list[float], start: float = FIT_FROM) -> dict | None:
    """Least-squares line through the points with x >= start (or the last 5/6 if too short)."""
    pts = [(x, y) for x, y in zip(xs, ys, strict=False) if math.isfinite(y)]
    if len(pts) < 3:
        return None
    window = [p for p in pts if p[0] >= start]
    if len(window) < 3:
        window = pts[len(pts) // 6:]
    n = len(window)
    mx = sum(p[0] for p in window) / n
    my = sum(p[1] for p in window) / n
    sxx = sum((p[0] - mx) ** 2 for p in window)
    if sxx == 0:
        return None
    slope = sum((p[0] - mx) * (p[1] - my) for p in window) / sxx
    return {"slope": slope, "intercept": my - slope * mx, "x0": window[0][0], "x1": window[-1][0]}


def _sibling(payload: Any, path: str) -> dict:
    """The dict that holds the series at `path` (where the suite keeps its own verdicts)."""
    node = payload
    for key in path.split(".")[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def _suite_fit(payload: Any, path: str) -> dict:
    """The suite's own verdict on a series: beside it, or in a dict named after its run
    elsewhere (memory.json keeps flatness.<run> apart from series.<run>)."""
    own = _sibling(payload, path)
    keys = path.split(".")
    if P.lookup(own, "slope_mb_per_step") is None and len(keys) >= 2:
        for where, value in P.walk(payload):
            if where and where[-1] == keys[-2] and where != tuple(keys[:-1]) and \
                    isinstance(value, dict) and "slope_mb_per_step" in value:
                return value
    return own


def _question(path: str, kind: str, control: bool) -> str:
    """The panel a series belongs to: the question it answers."""
    p = path.lower()
    if control:
        if "ctypes" in p:
            return ("ctypes malloc leak control (64 KiB per backward, never written): memray is "
                    "blind, RSS barely moves, glibc's count sees it")
        if "native" in p:
            return ("Native leak control (libc allocation never freed, in every backward): "
                    "tracemalloc is blind, memray is not")
        if "retain" in p:
            return "Retained-loss control (every loss tensor kept): tracemalloc sees a few bytes"
        return ("Graph-release leak control (graph kept, gc off): every tool sees the same "
                "growth, so the lines coincide")
    if kind == "RSS":
        run = series_label(path).split(":")[0]
        return f"RSS ({run}): flat over the run?"
    if kind == "memray heap":
        return "memray heap (native allocations included): flat over the run?"
    if kind == "malloc in use":
        return "glibc's bytes in use (every malloc, ctypes' included): flat over the run?"
    return "tracemalloc: live heap and step peak the same at every step?"


def _running_max(xs: list[float], ys: list[float], n: int) -> tuple[list[float], list[float]]:
    """Maximum over each n consecutive steps, placed at the window's centre (as the suite)."""
    if len(ys) < n:
        return xs, ys
    return xs[n // 2:len(xs) - (n - 1 - n // 2)], [max(ys[i:i + n])
                                                     for i in range(len(ys) - n + 1)]


def _fit_trace(xs: list[float], ys: list[float], unit: str) -> Trace | None:
    fit = fit_slope(xs, ys)
    if fit is None:
        return None
    x0, x1 = fit["x0"], fit["x1"]
    return Trace(f"└ its fit from step {x0:g}: {fit['slope']:+.3g} {unit}/step", [x0, x1],
                 [fit["intercept"] + fit["slope"] * x for x in (x0, x1)], "#222222", "fit")


def _panels(payload: Any) -> tuple[list[Panel], list[list[Any]]]:
    questions: dict[str, list[tuple[str, str, list[float], list[float]]]] = {}
    controls: set[str] = set()
    fits: list[list[Any]] = []
    for path, values in P.numeric_series(payload):
        kind = _kind(path)
        if kind is None:
            continue
        ys = _to_mb(path, values)
        xs = _steps_for(payload, path, len(ys))
        fit = fit_slope(xs, ys)
        is_control = any(w in path.lower() for w in _CONTROL)
        question = _question(path, kind, is_control)
        questions.setdefault(question, []).append((path, kind, xs, ys))
        if is_control:
            controls.add(question)
        label = {"text": series_label(path), "path": path, "kind": kind,
                 "control": is_control}
        finite = [y for y in ys if math.isfinite(y)]
        own = _suite_fit(payload, path)
        suite_slope = (P.as_float(P.lookup(own, "slope_mb_per_step"))
                       if kind in ("RSS", "memray heap", "malloc in use") else None)
        verdict = P.lookup(own, "flat")
        fits.append([label, len(ys), f"{fit['x0']:g}–{fit['x1']:g}" if fit else "—",
                     P.cell(fit["slope"] if fit else None, "num"),
                     P.cell(suite_slope, "num"),
                     P.cell(("flat" if verdict else "growing") if isinstance(verdict, bool)
                            else "—", "" if not isinstance(verdict, bool) else
                            ("pass" if verdict != is_control else "fail")),
                     f"{finite[0]:.4g} → {finite[-1]:.4g}" if finite else "—"])
    order = sorted(questions, key=lambda q: (q in controls, not q.startswith("RSS"),
                                             "memray" in q))
    return [_panel(q, questions[q], q in controls, payload) for q in order], fits


def _color(path: str, kind: str) -> str:
    if kind == "traced heap" and "peak" in path.rsplit(".", 1)[-1].lower():
        return COLORS["traced peak"]
    return COLORS.get(kind, COLORS["other"])


def _panel(question: str, series: list, control: bool, payload: Any) -> Panel:
    """Normal runs in MB; controls as growth after warm-up, in KB when it is small.
    RSS: the raw reading as faded dots, its running maximum bold, the fit on the maximum."""
    if control:
        growth = []
        for path, kind, xs, ys in series:
            first = next((i for i, x in enumerate(xs) if x >= CONTROL_FROM), 0)
            growth.append((path, kind, xs[first:], [y - ys[first] for y in ys[first:]]))
        small = max((abs(y) for *_, g in growth for y in g if math.isfinite(y)), default=0) < 1
        scale, unit = (1024, "KB") if small else (1, "MB")
        series = [(path, kind, xs, [y * scale for y in g]) for path, kind, xs, g in growth]
        panel = Panel(question, f"growth since step {CONTROL_FROM} ({unit})")
    else:
        unit = "MB"
        panel = Panel(question, unit, min_span=2.0)
    for path, kind, xs, ys in series:
        name, color = series_label(path), _color(path, kind)
        if kind == "RSS" and not control:
            n = int(P.as_float(P.lookup(_suite_fit(payload, path), "envelope_steps")) or ENVELOPE)
            panel.traces.append(Trace(f"{name} after each step (raw)", xs, ys, color, "raw"))
            xs, ys = _running_max(xs, ys, n)
            name = f"running max over {n} steps (judged)"
        panel.traces.append(Trace(name, xs, ys, color))
        fit = _fit_trace(xs, ys, unit)
        if fit is not None:
            panel.traces.append(fit)
    return panel


def _peaks(payload: Any, summary: dict) -> list[dict]:
    """Rows for every dict holding both a peak and a budget number."""
    rows = []
    for path, value in P.walk(payload):
        if not isinstance(value, dict):
            continue
        flat = {k: v for k, v in value.items() if P.is_number(v)}
        peaks = [k for k in flat if "peak" in k.lower()]
        budgets = [k for k in flat if "budget" in k.lower() or "target" in k.lower()]
        for pk in peaks:
            for bk in budgets:
                ratio = flat[pk] / flat[bk] if flat[bk] else None
                limit = P.as_float(P.lookup(value, "factor", "max_ratio", "budget_factor"))
                if limit is None and "target" in bk.lower():
                    limit = 1.0  # a target is a plain ceiling
                control = any(w in ".".join(path).lower() for w in _CONTROL)
                verdict = ("" if limit is None or ratio is None else
                           ("pass" if (ratio <= limit) != control else "fail"))
                where = series_label(".".join(p for p in path if p != "peak")) or "memory.json"
                rows.append([P.cell(f"{where} (negative control: must exceed)" if control
                                    else where, title=".".join(path)),
                             P.cell(series_label(pk), title=pk), P.cell(flat[pk], "num"),
                             P.cell(series_label(bk), title=bk), P.cell(flat[bk], "num"),
                             P.cell(f"{ratio:.3f}" if ratio is not None else "—", verdict),
                             limit])
                if not any(w in ".".join(path).lower() for w in _CONTROL):
                    summary.setdefault("peak_ratio", ratio)
    if not rows:
        return [P.missing("Peak vs budget", "memory.json has no entry holding both a peak and a "
                          "budget figure.")]
    return [P.table("Peak vs budget", ["run", "peak", "MB", "budget / target", "MB",
                                       "peak ÷ budget", "allowed factor"], rows,
                    note="Budget = the analytic footprint (parameters + gradients + optimizer "
                         "state + the activations backward needs); a target is a fixed "
                         "ceiling (MB). Rows under a leak control must exceed their factor.")]


def _markers(payload: Any) -> list[dict]:
    """pytest-memray's limits and what each planted negative control did to them."""
    markers = P.lookup(P.lookup(payload, "memray", default={}), "markers")
    if not isinstance(markers, dict) or not isinstance(markers.get("controls"), dict):
        return []
    limits = {"no_leaks": f"limit_leaks: {markers.get('leak_limit_mb_per_location')} MB per "
                          "allocation location, 300 steps",
              "step_peak": f"limit_memory: {P.fmt(markers.get('step_peak_limit_mb'))} MB for "
                           f"one step ({P.fmt(markers.get('factor'))} × the footprint, less "
                           "the parameters and Adam state held before it)"}
    expected = markers.get("expected") if isinstance(markers.get("expected"), dict) else {}
    rows = []
    for plant, outcomes in markers["controls"].items():
        for test, message in (outcomes or {}).items():
            what = next((v for k, v in limits.items() if k in test), test)
            want = P.lookup(expected.get(plant), test)
            got = "fail" if message else "pass"
            rows.append([what, f"{plant} leak planted", want or "—", P.cell(
                f"{got}: {message}" if message else got,
                "" if want is None else ("pass" if want == got else "fail"))])
    return [P.table("memray markers (pytest-memray) under the negative controls", [
        "marker", "control", "expected", "outcome"], rows,
        note="The marker tests pass on the normal workload in the suite itself; here the same "
             "tests run again with a leak planted (--memory-plant). Green: the outcome the suite "
             "expects (and asserts). The native leak (64 KiB a step) is no step-peak problem, so "
             "that test passes.")]
