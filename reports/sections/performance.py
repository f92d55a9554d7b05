"""Performance section: minitorch vs PyTorch and hand-written NumPy (bench.json), per-op forward
and backward times and the timing history across commits (asv's stored results)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .. import asv_history, figures
from .. import parts as P
from ..inputs import Inputs

HOW_BENCH = ("run `make report` (quick benchmark) or `python -m benchmarks.compare_peers`, "
             "`python -m benchmarks.profile_step` and `python -m benchmarks.scaling` to write it")
HOW_ASV = ("record a commit with `OPENBLAS_NUM_THREADS=1 ASV_PYTHONPATH=$PWD asv run "
           "--python=same --set-commit-hash=$(git rev-parse HEAD)` or `make report ASV=1`")
MAX_TRACES = 16


def build(inputs: Inputs) -> dict:
    out: list[dict] = []
    bench = inputs.json("bench.json")
    summary: dict[str, Any] = {"ratios": {}}
    if bench is None:
        out.append(P.missing("minitorch vs PyTorch and NumPy", f"No bench.json; {HOW_BENCH}."))
    else:
        out += _bench_parts(bench, summary)
    hist = asv_history.load(inputs.asv_results)
    if hist is None or not hist.series:
        inputs.note("asv results", "missing", str(inputs.asv_results))
        out.append(P.missing("Per-op forward/backward times", f"No asv results in "
                             f"{inputs.asv_results}; {HOW_ASV}."))
        out.append(P.missing("Timing history across commits", f"No asv results; {HOW_ASV}."))
    else:
        inputs.note("asv results", "found", f"{inputs.asv_results} · {hist.files} result files, "
                    f"{len(hist.commits())} commits")
        out += _per_op_parts(hist)
        out += _history_parts(hist)
        for problem in hist.problems:
            out.append(P.error("asv results", problem))
    return {"id": "performance", "title": "Performance", "parts": out, "summary": summary}


# ---------------------------------------------------------------- bench.json


def _ratio_keys(rows: list[dict]) -> list[str]:
    keys: list[str] = []
    for r in rows:
        for k, v in P.flat_row(r).items():
            if "ratio" in k.lower() and P.is_number(v) and k not in keys:
                keys.append(k)
    return keys


def _category(r: dict) -> str:
    return " ".join(str(r[k]) for k in ("preset", "dtype", "malloc") if k in r)


def _parent(payload: Any, path: str) -> Any:
    node = payload
    for key in path.split(".")[:-1] if path else []:
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _bench_parts(bench: Any, summary: dict) -> list[dict]:
    out: list[dict] = []
    for path, rows in P.dict_lists(bench):
        title = _title(path)
        ratio_keys = _ratio_keys(rows)
        if ratio_keys and any("preset" in r for r in rows):
            cats = [_category(r) for r in rows]
            groups = {k: [P.as_float(P.flat_row(r).get(k)) for r in rows] for k in ratio_keys}
            spreads = {k: [r.get(f"{k}_iqr") for r in rows] for k in ratio_keys}
            for cat, r in zip(cats, rows, strict=True):
                summary["ratios"][cat] = {k: P.flat_row(r).get(k) for k in ratio_keys}
            out.append(P.plot(f"{title}: step-time ratios",
                              figures.bars(cats, groups, "ratio (lower is better)",
                                           ref=1.0, ref_label="parity", spreads=spreads),
                              note="minitorch's step time divided by the peer's for the same "
                                   "step (same batch, data, dtype and threads), median over "
                                   "interleaved rounds; whiskers: interquartile range. "
                                   "1.0 = as fast."))
        if any(isinstance(r.get("ms_per_step"), dict) for r in rows):
            out.append(_peers_table(title, rows, P.lookup(_parent(bench, path), "targets")))
            out.append(P.generic_table(f"{title}: every field", rows, collapsed=True,
                                       max_cols=40))
        elif all("axis" in r and "step_ms" in r for r in rows):
            out += _scaling_parts(path, rows, _parent(bench, path))
        elif all("op" in r and ("fwd_ms" in r or "bwd_ms" in r) for r in rows):
            out += _profile_parts(path, rows, _parent(bench, path))
        else:
            out.append(P.generic_table(title, rows, collapsed=len(rows) > 30))
    figures_ = [(k, v) for k, v in P.scalars(bench) if not k.startswith("_")]
    if figures_:
        out.append(P.kv("Benchmark machine, versions and settings", figures_[:120],
                        collapsed=True))
    if not out:
        out.append(P.error("minitorch vs PyTorch and NumPy", "bench.json has no rows."))
    return out


def _peers_table(title: str, rows: list[dict], targets: Any) -> dict:
    """ms per step of each implementation, the ratios with their spread, and the target."""
    impls: list[str] = []
    for r in rows:
        for k in r.get("ms_per_step") or {}:
            if k not in impls:
                impls.append(k)
    peers = [i for i in impls if i != "minitorch"]
    body = []
    for r in rows:
        ms = r.get("ms_per_step") or {}
        line: list[Any] = [r.get("preset"), r.get("dtype"), r.get("malloc", "")]
        line += [P.cell(ms.get(i), "num") for i in impls]
        for peer in peers:
            ratio, iqr = r.get(f"ratio_vs_{peer}"), r.get(f"ratio_vs_{peer}_iqr")
            spread = (f" [{iqr[0]:.2f}, {iqr[1]:.2f}]" if isinstance(iqr, list) and len(iqr) == 2
                      else "")
            line.append(P.cell(f"{ratio:.2f}{spread}" if P.is_number(ratio) else "—", "num"))
        target = targets.get(f"{r.get('preset')}/{r.get('dtype')}") if isinstance(
            targets, dict) else None
        if isinstance(target, dict):
            ok = all(P.is_number(r.get(f"ratio_vs_{p}")) and r[f"ratio_vs_{p}"] <= t
                     for p, t in target.items())
            line.append(P.cell(("meets " if ok else "misses ") + ", ".join(
                f"≤ {t}× {p}" for p, t in target.items()), "pass" if ok else "fail"))
        else:
            line.append("")
        body.append(line)
    return P.table(title, ["preset", "dtype", "malloc", *[f"{i} ms/step" for i in impls],
                           *[f"minitorch / {p} [IQR]" for p in peers], "target"], body,
                   note="Interleaved runs of the same training step (forward, loss, backward, "
                        "optimizer); ms = median step time.")


def _scaling_parts(path: str, rows: list[dict], parent: Any) -> list[dict]:
    """Step time against batch, sequence length, width and depth (one axis varied at a time)."""
    dtype = P.lookup(parent, "dtype", default=path.split(".")[1] if "." in path else "")
    base = P.lookup(parent, "base")
    panels, body = [], []
    for r in rows:
        xs = r.get("values") or []
        series = [("step", xs, r["step_ms"])]
        if isinstance(r.get("attention_core_ms"), list):
            series += [("attention core", xs, r["attention_core_ms"]),
                       ("rest of the step", xs, r.get("rest_ms") or [])]
        panels.append((str(r["axis"]), series))
        cells = ", ".join(f"{x}: {P.fmt(y)}" for x, y in zip(xs, r["step_ms"], strict=False))
        body.append([r["axis"], cells, P.cell(r.get("slope"), "num"),
                     P.cell(r.get("attention_slope"), "num"), P.cell(r.get("rest_slope"), "num")])
    note = (f"{dtype}; one size varied at a time, the others at {P.fmt(base)}. Exponent k of "
            "time ~ size^k over the larger sizes: ~1 is linear; the attention core should be "
            "~2 in sequence length and the rest ~1.")
    return [P.plot(f"Scaling ({dtype}): step time vs size (log-log)",
                   figures.loglog_panels(panels, "ms per step"), note=note),
            P.table(f"Scaling ({dtype})", ["axis", "size: ms per step", "exponent",
                                           "attention core exponent", "rest exponent"], body)]


def _profile_parts(path: str, rows: list[dict], parent: Any) -> list[dict]:
    """Per-op forward and backward time inside one training step (profile_step)."""
    what = " ".join(str(P.lookup(parent, k, default="")) for k in ("preset", "dtype", "malloc"))
    def cost(r: dict) -> float:
        return (P.as_float(r.get("fwd_ms")) or 0.0) + (P.as_float(r.get("bwd_ms")) or 0.0)

    total = sum(cost(r) for r in rows) or 1.0
    ranked = sorted(rows, key=lambda r: -cost(r))
    top = ranked[:20]
    labels = [f"{r.get('scope', '')}:{r['op']}".strip(":") for r in top]
    stacks = {"forward": [P.as_float(r.get("fwd_ms")) or 0.0 for r in top],
              "backward": [P.as_float(r.get("bwd_ms")) or 0.0 for r in top]}
    plot = P.plot(f"Per-op forward/backward time in one training step ({what.strip()})",
                  figures.hbars(labels, stacks, "ms per step"),
                  note="The 20 costliest (scope, op) pairs, timed through the engine's hooks "
                       "while training; scope is the composite or module that called the op.")
    body = [[r.get("scope", ""), r["op"], P.cell(r.get("calls"), "num"),
             P.cell(r.get("fwd_ms"), "num"), P.cell(r.get("bwd_ms"), "num"),
             P.cell(f"{cost(r) / total:.1%}", "num")] for r in ranked]
    phases = P.lookup(parent, "phases_ms")
    items = [(f"{k} (ms)", v) for k, v in phases.items()] if isinstance(phases, dict) else []
    for k in ("ms_per_step", "fwd_ops_ms", "bwd_ops_ms", "engine_fwd_ms", "engine_bwd_ms",
              "faults_per_step"):
        if P.is_number(P.lookup(parent, k)):
            items.append((k, P.lookup(parent, k)))
    out = [plot, P.table(f"Per-op times, every op ({what.strip()})",
                         ["scope", "op", "calls/step", "forward ms", "backward ms",
                          "share of op time"], body, collapsed=True)]
    if items:
        out.append(P.kv(f"Step phases and engine overhead ({what.strip()})", items,
                        note="engine = phase time minus the ops' own time: the Python "
                             "bookkeeping (an upper bound, as it includes the timers)."))
    return out


def _title(path: str) -> str:
    names = {"": "Step time", "rows": "Step time", "steps": "Step time", "results": "Step time",
             "peers.rows": "minitorch vs PyTorch eager vs hand-written NumPy",
             "scaling": "Scaling", "scaling.rows": "Scaling", "ops": "Per-op times"}
    return names.get(path, path.replace(".", " · ").replace("_", " ").capitalize())


# ---------------------------------------------------------------- asv


def _fmt_value(value: float | None, unit: str) -> str:
    if value is None:
        return "failed"
    if unit == "seconds":
        return f"{value * 1e3:.4g} ms"
    if unit == "bytes":
        return f"{value / 2**20:.4g} MB"
    return f"{P.fmt(value)} {unit}".strip()


def _per_op_parts(hist: asv_history.AsvHistory) -> list[dict]:
    """The latest recorded time of every op-parametrized asv benchmark (OpForward, ...)."""
    order = {c: i for i, (_, c) in enumerate(hist.commits())}
    cols: list[str] = []
    table: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    commits: set[str] = set()
    for (bench, combo), pts in hist.series.items():
        names = hist.param_names(bench)
        if "op" not in names:
            continue
        values = combo.split(", ")
        if len(values) != len(names) or not pts:
            continue
        op = values[names.index("op")]
        rest = ", ".join(f"{n}={v}" for n, v in zip(names, values, strict=True) if n != "op")
        point = max(pts, key=lambda p: order[p.commit])
        commits.add(point.commit[:8])
        col = bench.rsplit(".", 1)[-1]
        if col not in cols:
            cols.append(col)
        table[(op, rest)][col] = _fmt_value(point.value, hist.unit(bench))
    if not table:
        return [P.missing("Per-op forward/backward times (asv)", "The asv results hold no "
                          "benchmark parametrized by op (benchmarks/bench_ops.py); "
                          f"{HOW_ASV}.")]
    cols.sort(key=lambda c: ("backward" in c or "bwd" in c, c))  # forward first
    rows = [[op, rest, *[P.cell(v.get(c, "—"), "num") for c in cols]]
            for (op, rest), v in sorted(table.items())]
    return [P.table(f"Per-op forward/backward times (asv, commit {', '.join(sorted(commits))})",
                    ["op", "params", *cols], rows, collapsed=len(rows) > 60,
                    note="Each op alone on fixed inputs, the latest recorded result.")]


def _history_parts(hist: asv_history.AsvHistory) -> list[dict]:
    commits = hist.commits()
    order = {c: i for i, (_, c) in enumerate(commits)}
    labels = [c[:8] for _, c in commits]
    series, rows = [], []
    machines = sorted({p.machine for pts in hist.series.values() for p in pts})
    split = [((bench, combo), machine, [p for p in pts if p.machine == machine])
             for (bench, combo), pts in sorted(hist.series.items()) for machine in machines]
    for (bench, combo), machine, pts in split:
        if "op" in hist.param_names(bench) or not pts:
            continue
        unit = hist.unit(bench)
        name = f"{bench.rsplit('.', 1)[-1]}({combo})" if combo else bench.rsplit(".", 1)[-1]
        if len(machines) > 1:
            name += f" @{machine}"  # timings from different machines are not comparable
        pts = sorted(pts, key=lambda p: order[p.commit])
        if unit == "seconds":
            series.append((name, [labels[order[p.commit]] for p in pts],
                           [p.value * 1e3 if p.value is not None else None for p in pts]))
        last = pts[-1]
        prev = pts[-2] if len(pts) > 1 else None
        ratio = (last.value / prev.value if prev and prev.value and last.value is not None
                 else None)
        rows.append([name, last.commit[:8], _fmt_value(last.value, unit),
                     _fmt_value(prev.value, unit) if prev else "—",
                     P.cell(ratio, "fail" if ratio and ratio > 1.2 else "num"), len(pts)])
    out = []
    if series:
        shown = series[:MAX_TRACES]
        note = (f"{len(commits)} commit(s), oldest first. " + ("Only one commit recorded so far: "
                f"{HOW_ASV} on more commits to see a history. " if len(commits) == 1 else ""))
        if len(series) > len(shown):
            note += f"{len(series) - len(shown)} more series are in the table below."
        out.append(P.plot("Timing history across commits (asv)",
                          figures.lines(shown, "commit", "time (ms)", markers=True), note=note))
    out.append(P.table("asv benchmarks: latest commit vs the one before",
                       ["benchmark", "latest commit", "latest", "previous", "ratio", "commits"],
                       rows, note="Ratio > 1.2 (20% slower than the previous commit) is marked.",
                       collapsed=len(rows) > 30))
    return out
