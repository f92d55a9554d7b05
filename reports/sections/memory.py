"""Memory section: RSS and traced heap over the training run with fitted slopes, peak vs budget,
and the leaking negative control beside it, from memory.json.

The series are found by name inside memory.json (any list of numbers whose path mentions rss,
heap or traced), so the reader follows the memory suite's layout rather than fixing it.
"""

from __future__ import annotations

import math
from statistics import median
from typing import Any

from .. import figures
from .. import parts as P
from ..inputs import Inputs

HOW = "run `make report` or `python -m pytest memory` to write it"
_CONTROL = ("leak", "control", "negative", "cyclic", "no_release", "norelease", "broken")
FIT_FROM = 50  # the suite's warm-up: slopes are fitted from this step on


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
        drawn = [p for p in panels if p[1]]
        for title, series in panels:
            if not series:
                out.append(P.missing(title, "No such series in memory.json."))
        out.append(P.plot("RSS and traced heap per step, with the least-squares slope",
                          figures.memory_grid(drawn, 2 if len(drawn) > 1 else 1, "MB"),
                          note=f"Dashed: least-squares fit from step {FIT_FROM} (after warm-up; "
                               "the last 5/6 of a shorter run) to the end. Left: normal runs, "
                               "which must stay flat. Right: negative controls (graph release "
                               "off and gc disabled, or every loss kept), which must grow."))
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
    figs = [(k, v) for k, v in P.scalars(payload)]
    if figs:
        out.append(P.kv("Every figure the memory suite wrote", figs[:300], collapsed=True,
                        note="As written by the suite (slopes, thresholds, peaks, budgets)."))
    return {"id": "memory", "title": "Memory", "parts": out, "summary": summary}


_RUNS = (("gc_enabled", "gc on"), ("gc_disabled", "gc off"), ("exact", ""), ("rss", "RSS"),
         ("_", " "))
_METRICS = {"rss_mb": "RSS", "traced_heap_bytes": "live traced heap",
            "traced_peak_bytes": "traced peak", "traced_peak_mb": "traced peak",
            "peak_rss_mb": "peak RSS"}


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
    """RSS, traced heap, or None (step indices, per-step differences, anything else), judged by
    the series' own name, or by its path when the name is generic (values, mb, bytes)."""
    last = path.rsplit(".", 1)[-1].lower()
    if last in ("step", "steps", "steps_index", "index") or any(
            w in last for w in ("change", "diff", "delta")):
        return None
    name = path.lower() if last in ("values", "series", "mb", "bytes", "data") else last
    if "rss" in name:
        return "RSS"
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


def _panels(payload: Any) -> tuple[list[tuple[str, list]], list[list[Any]]]:
    grid: dict[tuple[str, bool], list] = {(k, c): [] for k in ("RSS", "traced heap")
                                          for c in (False, True)}
    fits: list[list[Any]] = []
    for path, values in P.numeric_series(payload):
        kind = _kind(path)
        if kind is None:
            continue
        ys = _to_mb(path, values)
        xs = _steps_for(payload, path, len(ys))
        fit = fit_slope(xs, ys)
        is_control = any(w in path.lower() for w in _CONTROL)
        label = {"text": series_label(path), "path": path, "kind": kind,
                 "control": is_control}
        grid[(kind, is_control)].append((series_label(path), xs, ys, fit))
        finite = [y for y in ys if math.isfinite(y)]
        own = _suite_fit(payload, path)
        suite_slope = P.as_float(P.lookup(own, "slope_mb_per_step")) if kind == "RSS" else None
        verdict = P.lookup(own, "flat")
        fits.append([label, len(ys), f"{fit['x0']:g}–{fit['x1']:g}" if fit else "—",
                     P.cell(fit["slope"] if fit else None, "num"),
                     P.cell(suite_slope, "num"),
                     P.cell(("flat" if verdict else "growing") if isinstance(verdict, bool)
                            else "—", "" if not isinstance(verdict, bool) else
                            ("pass" if verdict != is_control else "fail")),
                     f"{finite[0]:.4g} → {finite[-1]:.4g}" if finite else "—"])
    if not any(grid.values()):  # nothing drawable
        return [], fits
    titles = {("RSS", False): "RSS, normal runs", ("RSS", True): "RSS, negative control",
              ("traced heap", False): "Traced heap, normal runs",
              ("traced heap", True): "Traced heap, negative controls"}
    kinds = [k for k in ("RSS", "traced heap") if grid[(k, False)] or grid[(k, True)]]
    return [(titles[(k, c)], grid[(k, c)]) for k in kinds for c in (False, True)], fits


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
