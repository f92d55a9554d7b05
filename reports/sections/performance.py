"""Performance section: minitorch vs PyTorch and hand-written NumPy (bench.json), per-op forward
and backward times and the timing history across commits (asv's stored results)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .. import asv_history, figures
from .. import parts as P
from ..inputs import Inputs
from . import dispatch, peers

HOW_BENCH = ("run `make report` (quick benchmark) or `python -m benchmarks.compare_peers`, "
             "`python -m benchmarks.profile_step` and `python -m benchmarks.scaling` to write it")
HOW_ASV = ("record a commit with `make bench` (asv run --record-samples under the CPU-derived "
           "machine name) or `benchmarks/history.sh RANGE`")
MAX_TRACES = 16


def build(inputs: Inputs) -> dict:
    out: list[dict] = []
    bench = inputs.json("bench.json")
    others = _other_machines(inputs)
    summary: dict[str, Any] = {}
    if bench is None:
        out.append(P.missing("minitorch vs PyTorch and NumPy", f"No bench.json; {HOW_BENCH}."))
    else:
        out += _bench_parts(bench, summary, others)
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
        out += dispatch.parts(hist)
        out += _history_parts(hist)
        for problem in hist.problems:
            out.append(P.error("asv results", problem))
    return {"id": "performance", "title": "Performance", "parts": out, "summary": summary}


# ---------------------------------------------------------------- bench.json


def _parent(payload: Any, path: str) -> Any:
    node = payload
    for key in path.split(".")[:-1] if path else []:
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _other_machines(inputs: Inputs) -> list[Any]:
    """bench.json files copied from other machines: artifacts/bench-<name>.json and
    artifacts/machines/<name>/bench.json (their peer runs get a column per machine)."""
    paths = sorted(inputs.artifacts.glob("bench-*.json"))
    paths += sorted(inputs.artifacts.glob("machines/*/bench.json"))
    found = [inputs.json_file(p, str(p.relative_to(inputs.artifacts))) for p in paths]
    return [b for b in found if b is not None]


def _bench_parts(bench: Any, summary: dict, others: list[Any] | None = None) -> list[dict]:
    out = peers.parts(bench, summary, others)
    profiles, scaling, cprofile, other = [], [], {}, []
    for path, rows in P.dict_lists(bench):
        parent = _parent(bench, path)
        if any(isinstance(r.get("ms_per_step"), dict) for r in rows):
            continue  # peer runs: peers.parts
        if all("axis" in r and "step_ms" in r for r in rows):
            scaling.append((path, rows, parent))
        elif all("op" in r and ("fwd_ms" in r or "bwd_ms" in r) for r in rows):
            profiles.append((path, rows, parent))
        elif path.endswith("cprofile_top") and all("function" in r for r in rows):
            cprofile[path.rsplit(".", 1)[0]] = rows
        elif path == "gate.rows" and isinstance(parent, dict):
            other.insert(0, _gate_table(parent, rows))
        elif path == "whole_machine.rows":
            out.append(_whole_machine_table(rows, parent))
        elif path == "matmul_floor.rows":
            out.append(_matmul_floor_table(rows, parent))
        else:
            other.append(P.generic_table(_title(path), rows, collapsed=len(rows) > 30))
    if profiles:
        out += _profile_parts(profiles, cprofile)
    for i, (path, rows, parent) in enumerate(scaling):
        out += _scaling_parts(path, rows, parent, plot=i == 0)
    out += other
    figures_ = [(k, v) for k, v in P.scalars(bench) if not k.startswith("_")]
    if figures_:
        out.append(P.kv("Benchmark machine, versions and settings (every scalar in bench.json)",
                        figures_[:120], collapsed=True))
    if not out:
        out.append(P.error("minitorch vs PyTorch and NumPy", "bench.json has no rows."))
    return out


def _cpu(parent: Any) -> str:
    info = (parent or {}).get("info") if isinstance(parent, dict) else None
    machine = (info or {}).get("machine") if isinstance(info, dict) else None
    return str(machine or (info or {}).get("cpu") or "CPU not recorded")


def _whole_machine_table(rows: list[dict], parent: Any) -> dict:
    """benchmarks/whole_machine.py: every way each library uses the cores, ms with intervals,
    and the fastest-vs-fastest ratio with its verdict (none when not measured reliably)."""
    body = []
    for r in rows:
        ms, ci, rel = r.get("ms") or {}, r.get("ms_ci") or {}, r.get("reliability") or {}
        for label in sorted(ms, key=lambda k: ms[k]):
            lo, hi = ci.get(label) or (None, None)
            ok = (rel.get(label) or {}).get("reliable")
            body.append([r.get("preset"), r.get("dtype"), label, P.cell(ms[label], "num"),
                         f"[{P.fmt(lo)}, {P.fmt(hi)}]", "yes" if ok else "no", ""])
        lo, hi = r.get("ratio_ci") or (None, None)
        verdict = r.get("verdict") or "no verdict: not measured reliably"
        body.append([r.get("preset"), r.get("dtype"),
                     f"fastest: {r.get('fastest_minitorch')} / {r.get('fastest_torch')}",
                     P.cell(r.get("ratio"), "num"), f"[{P.fmt(lo)}, {P.fmt(hi)}]", "",
                     f"{verdict} (target <= {r.get('target')})"])
    return P.table(f"The whole machine: each library's fastest configuration ({_cpu(parent)})",
                   ["preset", "dtype", "configuration", "ms/step (median)", "95 % interval",
                    "reliable", "verdict"], body,
                   note="python -m benchmarks.whole_machine; every configuration in its own "
                        "process, interleaved rounds; the last row of each block is minitorch's "
                        "fastest over PyTorch's fastest, per round.")


def _matmul_floor_table(rows: list[dict], parent: Any) -> dict:
    """benchmarks/matmul_floor.py: each step configuration against its own matmuls."""
    body = []
    for r in rows:
        ms = r.get("ms") or {}
        for label, ratio in (r.get("step_over_matmuls") or {}).items():
            floor = ms.get("matmuls as ranks" if "ranks" in label else
                           "matmuls threaded" if "threads" in label else "matmuls")
            body.append([r.get("preset"), r.get("dtype"), label, P.cell(ms.get(label), "num"),
                         P.cell(floor, "num"), P.cell(ratio, "num"),
                         "meets" if isinstance(ratio, (int, float)) and ratio <= r.get(
                             "target", 1.5) else "misses"])
    return P.table(f"Step time over the time of its own matmuls ({_cpu(parent)})",
                   ["preset", "dtype", "step", "step ms", "its matmuls ms", "ratio",
                    "<= 1.5x"], body,
                   note="python -m benchmarks.matmul_floor; the matmuls run alone and cache-hot "
                        "(threaded steps: each thread's shard matmuls at once; MPI ranks: each "
                        "rank's at once), medians of interleaved rounds in one process (the MPI "
                        "rows: in one mpiexec job).")


def _gate_table(gate: dict, rows: list[dict]) -> dict:
    """The last regression-gate run (benchmarks/gate.py): per config, both medians, the
    target/base ratio with its 95 % interval, and the verdict, or why there is none."""
    body = []
    for r in rows:
        ratio = r.get("ratio") or {}
        ci = (f" [{P.fmt(ratio.get('lo'))}, {P.fmt(ratio.get('hi'))}]"
              if P.is_number(ratio.get("lo")) else "")
        verdict = r.get("verdict")
        cell = (P.cell(f"{verdict} (p={P.fmt(r.get('p'))})",
                       {"slower": "fail", "faster": "pass"}.get(str(verdict), ""))
                if verdict else P.cell(f"no verdict: {r.get('unreliable', '')}", "warn"))
        body.append([r.get("preset"), r.get("dtype"),
                     P.cell(P.lookup(r, "base_ms", default={}).get("median"), "num"),
                     P.cell(P.lookup(r, "target_ms", default={}).get("median"), "num"),
                     P.cell(f"{P.fmt(ratio.get('median'))}{ci}", "num"), cell])
    base, target = (str(gate.get(k, "?")) for k in ("base", "target"))
    short = [x if "/" in x else x[:8] for x in (base, target)]
    return P.table(f"Regression gate: {short[0]} → {short[1]}",
                   ["preset", "dtype", "base ms/step", "target ms/step",
                    "target ÷ base [95 % CI]", "verdict"], body,
                   note="Both commits timed in alternating rounds (benchmarks/gate.py). "
                        "'slower' only when a Mann-Whitney U test gives p < 0.05 and the step "
                        f"is at least {_pct(gate.get('threshold'))} slower.")


def _pct(x: Any) -> str:
    return f"{x:.0%}" if P.is_number(x) else "?"


def _setting(parent: Any, path: str) -> str:
    """'seed, float32, tuned allocator, CPU clock, 1 BLAS thread' from a profile or scaling run."""
    info = P.lookup(parent, "info", default={})
    threads = P.lookup(info, "threads_requested", "blas_threads")
    if threads is None and "threads=" in path:
        threads = path.split("threads=")[1].split(".")[0].split("/")[0]
    clock = P.lookup(parent, "clock")
    bits = [str(P.lookup(parent, k)) for k in ("preset", "dtype") if P.lookup(parent, k)]
    if P.lookup(parent, "malloc"):
        bits.append(peers.ALLOCATOR.get(str(P.lookup(parent, "malloc")),
                                        f"allocator {P.lookup(parent, 'malloc')}"))
    if clock:
        bits.append({"cpu": "CPU-time clock", "wall": "wall clock"}.get(str(clock), str(clock)))
    if threads is not None:
        bits.append(peers.threads_text(threads))
    return ", ".join(bits) or path


# What the caption below promises for each exponent (time ~ size^k over the larger sizes);
# scaling.py writes the same ranges with each row ("expected"), which take precedence.
EXPECTED_EXPONENTS = {"batch": (0.6, 1.4), "depth": (0.6, 1.4), "seq": (0.6, 2.4),
                      "width": (0.6, 2.4), "attention_slope": (1.5, 2.5),
                      "rest_slope": (0.6, 1.4)}


def _exponent_cell(r: dict, key: str, flags: list[str]) -> dict | str:
    """An exponent, flagged (warn, with the reason) when it contradicts the caption."""
    k = P.as_float(r.get(key))
    if k is None:
        return P.cell(r.get(key), "num")
    expected = P.lookup(r, "expected", default={}) or {}
    rng = expected.get(key) or EXPECTED_EXPONENTS.get(str(r.get("axis")) if key == "slope"
                                                      else key)
    if isinstance(rng, (list, tuple)) and len(rng) == 2 and not rng[0] <= k <= rng[1]:
        why = (f"{r.get('axis')} {key.replace('_', ' ')} {k:.2f} contradicts the caption "
               f"(expected {rng[0]}–{rng[1]})")
        if r.get("reliable") is not None and not all(r.get("reliable") or [True]):
            why += "; some points were not measured reliably"
        flags.append(why)
        return P.cell(f"{k:.2f} ⚠ expected {rng[0]}–{rng[1]}", "warn", title=why)
    return P.cell(f"{k:.2f}", "num")


def _ci_text(ci: Any) -> str:
    if isinstance(ci, list) and len(ci) == 2 and all(P.is_number(x) for x in ci):
        return f" [{P.fmt(float(ci[0]))}, {P.fmt(float(ci[1]))}]"
    return ""


def _scaling_parts(path: str, rows: list[dict], parent: Any, plot: bool) -> list[dict]:
    """Step time against batch, sequence length, width and depth (one axis varied at a time);
    the plot only for the first setting, the others as tables. Exponents outside the range
    the caption promises are flagged; points not measured reliably are marked."""
    setting = _setting(parent, path)
    base = P.lookup(parent, "base")
    panels, body, flags = [], [], []
    for r in rows:
        xs = r.get("values") or []
        series = [("step", xs, r["step_ms"])]
        if isinstance(r.get("attention_core_ms"), list):
            series += [("attention core", xs, r["attention_core_ms"]),
                       ("rest of the step", xs, r.get("rest_ms") or [])]
        panels.append((str(r["axis"]), series))
        ok = r.get("reliable") if isinstance(r.get("reliable"), list) else [None] * len(xs)
        cis = r.get("step_ci") if isinstance(r.get("step_ci"), list) else [None] * len(xs)
        cells = ", ".join(f"{x}: {P.fmt(y)}{_ci_text(ci)}"
                          + (" (not measured reliably)" if o is False else "")
                          for x, y, ci, o in zip(xs, r["step_ms"], cis, ok, strict=False))
        body.append([r["axis"], cells, _exponent_cell(r, "slope", flags),
                     _exponent_cell(r, "attention_slope", flags),
                     _exponent_cell(r, "rest_slope", flags)])
    note = (f"One size varied at a time, the others at {P.fmt(base)}. Exponent k of time ~ "
            "size^k over the larger sizes: ~1 is linear; the attention core should be ~2 in "
            "sequence length and the rest ~1. Each point: median ms per step [95 % interval].")
    if flags:
        note += (" ⚠ Contradicting the caption: " + "; ".join(flags) + ". Read those exponents "
                 "as measurement noise or a real cost to investigate, not as a scaling law.")
    if P.lookup(parent, "reliable") is False:
        why = str(P.lookup(parent, "unreliable") or "not measured reliably")
        note += f" {why[:1].upper()}{why[1:]}: the exponents are not to be trusted."
    table = P.table(f"Scaling ({setting})", ["axis", "size: ms per step", "exponent",
                                             "attention core exponent", "rest exponent"], body,
                    note="" if plot and not flags else note)
    if not plot:
        return [table]
    return [P.plot(f"Scaling ({setting}): step time vs size (log-log)",
                   figures.loglog_panels(panels, "ms per step"), note=note), table]


_PHASES = [("ms_per_step", "step, as timed (ms)"), ("phases_ms.forward", "forward (ms)"),
           ("phases_ms.backward", "backward (ms)"), ("phases_ms.adam", "optimizer (ms)"),
           ("fwd_ops_ms", "ops' own forward time (ms)"),
           ("bwd_ops_ms", "ops' own backward time (ms)"),
           ("engine_fwd_ms", "engine overhead, forward (ms)"),
           ("engine_bwd_ms", "engine overhead, backward (ms)"),
           ("faults_per_step", "page faults per step")]


def _cost(r: dict) -> float:
    return (P.as_float(r.get("fwd_ms")) or 0.0) + (P.as_float(r.get("bwd_ms")) or 0.0)


def _profile_parts(profiles: list[tuple[str, list[dict], Any]],
                   cprofile: dict[str, list[dict]]) -> list[dict]:
    """Per-op forward and backward time inside one training step (profile_step): the plot for the
    configuration `minitorch train` runs, phases of every configuration side by side, and each
    configuration's per-op and cProfile tables folded away."""
    def rank(item: tuple[str, list[dict], Any]) -> list[bool]:
        parent = item[2] if isinstance(item[2], dict) else {}
        return [parent.get(k) == v for k, v in peers.TRAIN_DEFAULT.items()]

    main_path, main_rows, main_parent = max(profiles, key=rank)
    top = sorted(main_rows, key=lambda r: -_cost(r))[:20]
    labels = [f"{r.get('scope', '')}:{r['op']}".strip(":") for r in top]
    stacks = {"forward": [P.as_float(r.get("fwd_ms")) or 0.0 for r in top],
              "backward": [P.as_float(r.get("bwd_ms")) or 0.0 for r in top]}
    out = [P.plot(f"Per-op forward/backward time in one training step "
                  f"({_setting(main_parent, main_path)})",
                  figures.hbars(labels, stacks, "ms per step"),
                  note="The 20 costliest (scope, op) pairs, timed through the engine's hooks "
                       "while training; scope is the composite or module that called the op. "
                       "Other configurations are in the tables below.")]
    phase_rows = []
    for path, _, parent in profiles:
        flat = P.flat_row(parent) if isinstance(parent, dict) else {}
        sha = P.lookup(P.lookup(parent, "info", default={}), "git_sha")
        ok = P.lookup(parent, "reliable")
        why = P.lookup(parent, "unreliable") or "not measured reliably"
        phase_rows.append([_setting(parent, path),
                           *[P.cell(flat.get(k), "num" if ok is not False else "num muted")
                             for k, _ in _PHASES],
                           str(sha)[:7] if sha else "?",
                           P.cell("yes" if ok else why if ok is False else "not recorded",
                                  "" if ok else "warn")])
    out.append(P.table("Step phases per configuration (profile_step)",
                       ["configuration", *[label for _, label in _PHASES], "commit",
                        "measured reliably"], phase_rows,
                       note="Forward/backward/optimizer: wall or CPU time of each phase. Ops' "
                            "own time: the sum over ops of their forward or vjp code. Engine "
                            "overhead = phase time minus the ops' own time, i.e. the Python "
                            "bookkeeping (an upper bound, as it includes the timers)."))
    for path, rows, parent in profiles:
        setting = _setting(parent, path)
        total = sum(_cost(r) for r in rows) or 1.0
        body = [[r.get("scope", ""), r["op"], P.cell(r.get("calls"), "num"),
                 P.cell(r.get("fwd_ms"), "num"), P.cell(r.get("bwd_ms"), "num"),
                 P.cell(f"{_cost(r) / total:.1%}", "num")]
                for r in sorted(rows, key=lambda r: -_cost(r))]
        out.append(P.table(f"Per-op times ({setting})", ["scope", "op", "calls per step",
                                                         "forward ms", "backward ms",
                                                         "share of op time"], body,
                           collapsed=True))
        top_fns = cprofile.get(path.rsplit(".", 1)[0])
        if top_fns:
            out.append(_cprofile_table(setting, top_fns))
    return out


def _function_name(text: str) -> str:
    """'/tmp/x/minitorch/engine/ops/fused.py:44(vjp)' -> 'minitorch/engine/ops/fused.py:44 vjp';
    '~:0(<method 'reduce' of 'numpy.ufunc' objects>)' -> 'built-in: method 'reduce' of ...'."""
    if text.startswith("~:0(<") and text.endswith(">)"):
        return "built-in: " + text[5:-2].removesuffix(" objects")
    for root in ("minitorch/", "numpy/"):
        if root in text:
            text = root + text.split(root, 1)[1]
            break
    head, sep, fn = text.partition("(")
    return f"{head} {fn.removesuffix(')')}" if sep else text


def _cprofile_table(setting: str, rows: list[dict]) -> dict:
    body = [[_function_name(str(r.get("function", ""))), P.cell(r.get("calls_per_step"), "num"),
             P.cell(r.get("tottime_ms"), "num"), P.cell(r.get("cumtime_ms"), "num")]
            for r in rows]
    return P.table(f"cProfile, top functions ({setting})",
                   ["function", "calls per step", "own time (ms per step)",
                    "with callees (ms per step)"], body, collapsed=True,
                   note="Python's cProfile over the same steps: own time excludes the "
                        "functions it calls; with callees includes them.")


def _title(path: str) -> str:
    return path.replace(".", " · ").replace("_", " ").capitalize() or "Step time"


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
    """The history plot (one series per benchmark and machine, never two machines in one) and a
    table with one column group per machine: the latest value and its change from the commit
    before, flagged only when significant and >= 10 % (asv_history.change)."""
    commits = hist.commits()
    order = {c: i for i, (_, c) in enumerate(commits)}
    labels = [c[:8] for _, c in commits]
    machines = sorted({p.machine for pts in hist.series.values() for p in pts})
    series, rows = [], []
    for (bench, combo), all_pts in sorted(hist.series.items()):
        if "op" in hist.param_names(bench):
            continue
        unit = hist.unit(bench)
        name = f"{bench.rsplit('.', 1)[-1]}({combo})" if combo else bench.rsplit(".", 1)[-1]
        row: list = [name]
        for machine in machines:
            pts = sorted((p for p in all_pts if p.machine == machine),
                         key=lambda p: order[p.commit])
            if not pts:
                row += ["—", "—"]
                continue
            if unit == "seconds":
                label = f"{name} @{machine}" if len(machines) > 1 else name
                series.append((label, [labels[order[p.commit]] for p in pts],
                               [p.value * 1e3 if p.value is not None else None for p in pts]))
            last = pts[-1]
            row.append(P.cell(f"{_fmt_value(last.value, unit)} ({last.commit[:8]})", "num"))
            row.append(_change_cell(pts[-2] if len(pts) > 1 else None, last))
        rows.append(row)
    out = []
    if series:
        shown = series[:MAX_TRACES]
        note = (f"{len(commits)} commit(s), oldest first; one series per benchmark and machine. "
                + ("Only one commit recorded so far: "
                   f"{HOW_ASV} on more commits to see a history. " if len(commits) == 1 else ""))
        if len(series) > len(shown):
            note += f"{len(series) - len(shown)} more series are in the table below."
        out.append(P.plot("Timing history across commits (asv)",
                          figures.lines(shown, "commit", "time (ms)", markers=True), note=note))
    columns = ["benchmark"]
    for m in machines:
        columns += [f"{m}: latest (commit)", f"{m}: vs the commit before"]
    out.append(P.table("asv benchmarks: latest commit vs the one before, per machine", columns,
                       rows, collapsed=len(rows) > 30,
                       note="One column group per machine (asv machine name, derived from the "
                            "CPU): timings from different machines are never compared. A "
                            "change is flagged only when it is statistically significant "
                            "(Mann-Whitney U over the recorded samples, p < 0.05; without "
                            "samples, non-overlapping 99 % intervals) and at least 10 %. "
                            "Record samples with `asv run --record-samples`."))
    return out


def _change_cell(prev: asv_history.Point | None, last: asv_history.Point) -> dict:
    if prev is None:
        return P.cell("first recorded commit")
    ch = asv_history.change(prev, last)
    if ch is None:
        ratio = (f"{last.value / prev.value:.2f}× " if prev.value and last.value is not None
                 else "")
        return P.cell(f"{ratio}not judged: no samples or intervals recorded", "num muted")
    p = f", p={ch['p']:.2g}" if ch["p"] is not None else ", intervals"
    text = {"slower": "slower (significant)", "faster": "faster (significant)",
            "same": "no significant change"}[ch["verdict"]]
    return P.cell(f"{ch['ratio']:.2f}× {text}{p}",
                  {"slower": "fail", "faster": "pass"}.get(ch["verdict"], "num"),
                  title=f"vs {prev.commit[:8]}; test: {ch['test']}")
