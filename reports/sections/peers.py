"""minitorch vs PyTorch eager vs hand-written NumPy, from the peer tables in bench.json: the
headline figure for the summary card, the latest run's plot and table, one column per machine
when several machines' results are present, and every earlier or labelled run in one table.
Reads what benchmarks/compare_peers.py writes (medians, 95 % intervals, reliability, verdicts);
computes no timing. A row not measured reliably keeps its numbers, greyed, and gets no verdict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .. import figures
from .. import parts as P

NAMES = {"minitorch": "minitorch", "torch": "PyTorch", "numpy": "NumPy"}
ALLOCATOR = {"tuned": "tuned allocator", "default": "glibc default allocator"}
TRAIN_DEFAULT = {"preset": "seed", "dtype": "float32", "malloc": "tuned"}  # `minitorch train`


@dataclass
class PeerRun:
    """One compare_peers run: its rows (one per preset, dtype and allocator) and its metadata."""

    path: str  # where the rows sit in bench.json, e.g. "peers.rows"
    rows: list[dict]
    meta: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        keys = self.path.split(".")
        if keys[0] == "peers":
            return "latest run"
        if keys[0] == "peers_by_threads" and len(keys) > 1:
            return f"latest {threads_text(keys[1])} run"
        if keys[0] == "peers_by_workers" and len(keys) > 1:
            return f"latest run with {keys[1]} (minitorch data-parallel / replayed)"
        if keys[0] == "peers_by_machine" and len(keys) > 1:
            return f"latest run on {keys[1]}"
        if keys[0] == "peers_runs" and len(keys) > 1:
            return f"run '{keys[1]}'"
        return self.path.removesuffix(".rows") or "bench.json"

    @property
    def threads(self) -> Any:
        info = (self.meta.get("info") or {}).get("minitorch") or {}
        return self.meta.get("threads", info.get("threads_requested") if isinstance(info, dict)
                             else None)

    @property
    def commit(self) -> str:
        info = (self.meta.get("info") or {}).get("minitorch") or {}
        sha = info.get("git_sha") if isinstance(info, dict) else None
        return str(sha)[:7] if sha else "?"

    def context(self) -> str:
        """Threads, commit, rounds: what a reader needs to compare two runs."""
        parts = [threads_text(self.threads), f"commit {self.commit}"]
        if (self.meta.get("workers") or 1) > 1:
            parts.insert(1, f"minitorch and NumPy data-parallel on {self.meta['workers']} "
                            "worker threads of one BLAS thread each")
        if self.meta.get("replay"):
            parts.insert(1, "minitorch replaying its captured step")
        if self.meta.get("rounds") and "steps" in self.meta:
            parts.append(f"{self.meta['rounds']} rounds of {self.meta['steps']} steps")
        elif self.meta.get("rounds"):
            parts.append(f"{self.meta['rounds']} interleaved rounds")
        return ", ".join(parts)


def threads_text(n: Any) -> str:
    return f"{n} BLAS thread{'s' if str(n) != '1' else ''}" if n is not None else "threads ?"


def find_runs(bench: Any) -> list[PeerRun]:
    """Every list of peer rows in bench.json, each stored run once (compare_peers keeps the
    latest run under "peers" and again under "peers_by_threads"), the latest first."""
    runs: list[PeerRun] = []
    seen: set[str] = set()
    for path, rows in P.dict_lists(bench):
        if not any(isinstance(r.get("ms_per_step"), dict) for r in rows):
            continue
        meta = _parent(bench, path)
        key = json.dumps(meta if isinstance(meta, dict) else rows, sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        runs.append(PeerRun(path, rows, meta if isinstance(meta, dict) else {}))
    runs.sort(key=lambda r: r.path.split(".")[0] != "peers")  # stable: the latest first
    return runs


def _parent(payload: Any, path: str) -> Any:
    node = payload
    for key in path.split(".")[:-1] if path else []:
        node = node.get(key) if isinstance(node, dict) else None
    return node if path else None


def representative(rows: list[dict]) -> dict | None:
    """The row closest to what `minitorch train` runs (seed preset, float32, tuned allocator)."""
    if not rows:
        return None
    return max(rows, key=lambda r: [r.get(k) == v for k, v in TRAIN_DEFAULT.items()])


def ratio(row: dict, peer: str, clock: str = "wall") -> float | None:
    src = row if clock == "wall" else row.get("cpu") or {}
    v = src.get(f"ratio_vs_{peer}") if isinstance(src, dict) else None
    return float(v) if P.is_number(v) else None


def ratio_ci(row: dict, peer: str, clock: str = "wall") -> tuple[float, float] | None:
    """The 95 % interval of a ratio (compare_peers since intervals were introduced), else None."""
    src = row if clock == "wall" else row.get("cpu") or {}
    ci = src.get(f"ratio_vs_{peer}_ci") if isinstance(src, dict) else None
    if isinstance(ci, list) and len(ci) == 2 and all(P.is_number(x) for x in ci):
        return float(ci[0]), float(ci[1])
    return None


def status(row: dict) -> tuple[bool, str]:
    """(reliable, why not): compare_peers marks each row; a row from before the harness recorded
    outside load and intervals cannot be judged and counts as not measured reliably."""
    if "reliable" in row:
        return bool(row["reliable"]), str(row.get("unreliable") or "not measured reliably")
    load = row.get("loadavg_1min")
    load_s = f"load average {load:.1f}" if P.is_number(load) else "load ?"
    return False, f"not measured reliably: {load_s}, no CI (recorded before intervals)"


def verdicts(row: dict) -> dict[str, str | None]:
    """{peer: meets | misses | undecided} as compare_peers judged it; {} when unreliable."""
    v = row.get("verdict")
    ok, _ = status(row)
    return {k: x for k, x in v.items() if x} if ok and isinstance(v, dict) else {}


def _x(v: float | None) -> str:
    return f"{v:.2f}×" if v is not None else "—"


def _x_ci(row: dict, peer: str, clock: str) -> str:
    ci = ratio_ci(row, peer, clock)
    base = _x(ratio(row, peer, clock))
    return f"{base} [{ci[0]:.2f}–{ci[1]:.2f}]" if ci else base


def describe(row: dict) -> str:
    alloc = ALLOCATOR.get(str(row.get("malloc")), f"allocator {row.get('malloc', '?')}")
    return f"{row.get('preset', '?')} preset, {row.get('dtype', '?')}, {alloc}"


def headline(runs: list[PeerRun]) -> dict | None:
    """{lines, sub, reliable} for the summary card: the latest run's row closest to `minitorch
    train`. An unreliable row keeps its numbers but says why and carries no verdict."""
    if not runs:
        return None
    latest = runs[0]
    row = representative(latest.rows)
    if row is None:
        return None
    peers = [p for p in NAMES if p != "minitorch" and ratio(row, p) is not None]
    ok, why = status(row)
    lines = [f"minitorch / {NAMES[p]}: {_x_ci(row, p, 'wall')} (wall), "
             f"{_x_ci(row, p, 'cpu')} (CPU)" for p in peers]
    is_default = all(row.get(k) == v for k, v in TRAIN_DEFAULT.items())
    shape = f", batch {row['batch']} × {row['block']} tokens" if "batch" in row else ""
    sub = (f"{latest.name.capitalize()}: {describe(row)}"
           + (" (as `minitorch train` runs)" if is_default else "")
           + f"{shape}, {latest.context()}. Median step time, minitorch's ÷ the peer's"
           + (", [95 % interval]" if ratio_ci(row, peers[0] if peers else "torch") else "")
           + ": below 1× = minitorch faster.")
    if ok:
        v = verdicts(row)
        target = row.get("target") or {}
        if v:
            sub += " Target: " + ", ".join(f"{v[p]} ≤ {target.get(p, '?')}× {NAMES.get(p, p)}"
                                           for p in v) + "."
    else:
        sub = f"{why[:1].upper()}{why[1:]}: no verdict. " + sub
    for other in runs[1:]:
        if other.path.startswith("peers_by_threads") and other.threads != latest.threads:
            same = [r for r in other.rows if all(r.get(k) == row.get(k)
                                                 for k in ("preset", "dtype", "malloc"))]
            if same:
                figures_ = ", ".join(f"{_x(ratio(same[0], p))} {NAMES[p]}" for p in peers)
                flag = ", not measured reliably" if same[0].get("reliable") is False else ""
                sub += (f" With {threads_text(other.threads)} (commit {other.commit}): "
                        f"{figures_} (wall{flag}).")
    return {"lines": lines, "sub": sub, "reliable": ok, "unreliable": "" if ok else why}


def parts(bench: Any, summary: dict, others: list[Any] | None = None) -> list[dict]:
    """The latest run's plot and table, a table per machine when runs from several machines are
    present (bench.json's peers_by_machine, or other machines' bench.json files in `others`),
    then every other stored run in one collapsed table."""
    runs = find_runs(bench)
    for extra in others or []:
        runs += [r for r in find_runs(extra) if r.meta not in [x.meta for x in runs]]
    if not runs:
        return []
    summary["step_time"] = headline(runs)
    latest, out = runs[0], []
    out.append(_ratio_plot(latest))
    targets = P.lookup(latest.meta, "targets")
    out.append(_run_table(latest, targets))
    out.append(P.generic_table(f"Peer comparison, {latest.name}: every field as in bench.json",
                               latest.rows, collapsed=True, max_cols=40))
    by_machine = machines_table(runs)
    if by_machine:
        out.append(by_machine)
    if len(runs) > 1:
        out.append(_history_table(runs[1:]))
    return out


def _category(r: dict) -> str:
    text = f"{r.get('preset', '?')} · {r.get('dtype', '?')} · {r.get('malloc', '?')} allocator"
    return text if status(r)[0] else f"{text} (not measured reliably)"


GREY = "#c4c9d0"  # bars of rows not measured reliably (hatched as well)
COLOURS = {("torch", "wall"): "#1f77b4", ("torch", "cpu"): "#7fb2dd",
           ("numpy", "wall"): "#2ca02c", ("numpy", "cpu"): "#8fd18f"}


def _ratio_plot(run: PeerRun) -> dict:
    """Grouped bars with 95 % intervals as whiskers. Bar labels sit at the foot of each bar so
    they never collide with a whisker; rows not measured reliably are drawn grey."""
    import plotly.graph_objects as go

    cats = [_category(r) for r in run.rows]
    peers = [p for p in NAMES if p != "minitorch" and any(ratio(r, p) is not None
                                                          for r in run.rows)]
    fig = figures.new_figure()
    legacy = False
    for p in peers:
        for clock, label in (("wall", "wall clock"), ("cpu", "CPU time")):
            ys = [ratio(r, p, clock) for r in run.rows]
            spread = []
            for r, y in zip(run.rows, ys, strict=True):
                ci = ratio_ci(r, p, clock)
                if ci is None:  # older runs: the interquartile range they recorded
                    src = r if clock == "wall" else r.get("cpu") or {}
                    iqr = src.get(f"ratio_vs_{p}_iqr") if isinstance(src, dict) else None
                    ci = tuple(iqr) if isinstance(iqr, list) and len(iqr) == 2 else None
                    legacy = legacy or ci is not None
                spread.append(ci if ci and y is not None else (y, y))
            ok = [status(r)[0] for r in run.rows]
            fig.add_trace(go.Bar(
                x=cats, y=ys, name=f"vs {NAMES[p]}, {label}",
                marker={"color": [COLOURS[(p, clock)] if o else GREY for o in ok],
                        # bgcolor given: the template's overlay pattern otherwise defaults it
                        # to the colour list, which plotly.js warns about on every redraw
                        "pattern": {"shape": ["" if o else "/" for o in ok],
                                    "fgcolor": "#ffffff", "bgcolor": GREY}},
                error_y={"type": "data", "symmetric": False,
                         "array": [(hi - y) if y is not None and hi is not None else 0
                                   for (lo, hi), y in zip(spread, ys, strict=True)],
                         "arrayminus": [(y - lo) if y is not None and lo is not None else 0
                                        for (lo, hi), y in zip(spread, ys, strict=True)]},
                text=[f"{y:.2f}" if y is not None else "" for y in ys],
                textposition="inside", insidetextanchor="start"))
    if not all(status(r)[0] for r in run.rows):  # the legend must not take the grey
        for trace, key in zip(fig.data, [(p, c) for p in peers for c in ("wall", "cpu")],
                              strict=True):
            trace.marker.line = {"color": COLOURS[key], "width": 3}
    fig.add_hline(y=1.0, line_dash="dash", line_color="#888", annotation_text="as fast",
                  annotation_position="top left")
    fig.update_layout(yaxis_title="minitorch time ÷ peer time (lower is better)",
                      barmode="group")
    unreliable = [r for r in run.rows if not status(r)[0]]
    note = ("One training step (forward, loss, backward, optimizer) with the same batch, data, "
            "dtype and threads in all three; median over interleaved rounds of the per-round "
            "ratio; whiskers: 95 % confidence interval"
            + (" (interquartile range for runs recorded before intervals)" if legacy else "")
            + ". Below 1 = minitorch is faster. CPU time counts only the process's own CPU.")
    if unreliable:
        note += (f" Grey bars: {len(unreliable)} of {len(run.rows)} configurations not measured "
                 f"reliably ({status(unreliable[0])[1]}); no verdict is given for them.")
    return P.plot(f"Step time, minitorch ÷ peer ({run.name}: {run.context()})",
                  figures.to_div(fig, "bars"), note=note)


def _ratio_cell(row: dict, peer: str, clock: str) -> dict:
    v = ratio(row, peer, clock)
    ci = ratio_ci(row, peer, clock)
    if ci is None:
        src = row if clock == "wall" else row.get("cpu") or {}
        iqr = src.get(f"ratio_vs_{peer}_iqr") if isinstance(src, dict) else None
        if isinstance(iqr, list) and len(iqr) == 2 and all(P.is_number(x) for x in iqr):
            ci = (iqr[0], iqr[1])
    spread = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
    ok, why = status(row)
    text = f"{v:.2f}{spread}" if v is not None else "—"
    return P.cell(text if ok else f"({text}) not reliable", "num" if ok else "num muted",
                  title="" if ok else why)


def _run_table(run: PeerRun, targets: Any) -> dict:
    impls = [i for i in NAMES if any(i in (r.get("ms_per_step") or {}) for r in run.rows)]
    peers = [i for i in impls if i != "minitorch"]
    body = []
    for r in run.rows:
        ms = r.get("ms_per_step") or {}
        ok, why = status(r)
        line: list[Any] = [r.get("preset"), r.get("dtype"), r.get("malloc", "")]
        line += [P.cell(_ms_text(r, i), "num" if ok else "num muted") for i in impls if ms]
        line += [_ratio_cell(r, p, clock) for p in peers for clock in ("wall", "cpu")]
        load = r.get("outside_load")
        line.append(P.cell(f"{load:.2f}" if P.is_number(load) else "—", "num"))
        line.append(_target_cell(r, targets))
        body.append(line)
    columns = ["preset", "dtype", "allocator", *[f"{NAMES[i]} ms/step [95 % CI]" for i in impls],
               *[f"minitorch ÷ {NAMES[p]}, {c}" for p in peers
                 for c in ("wall [95 % CI]", "CPU [95 % CI]")],
               "outside load (cores)", "verdict (wall ratios vs target)"]
    return P.table(f"Step time per configuration ({run.name}: {run.context()})", columns, body,
                   note="ms/step = median wall time of one training step over interleaved "
                        "rounds, with its 95 % confidence interval (order statistics). Outside "
                        "load = cores other processes used while sampling (/proc/stat); samples "
                        f"above {run.meta.get('max_load', '?')} cores were retried, then "
                        "dropped. A verdict is given only for a row measured reliably: enough "
                        "clean samples and an interval within "
                        f"±{_pct(run.meta.get('max_ci'))}; 'undecided' when the interval "
                        "straddles the target. Allocator: glibc's defaults, or tuned with "
                        "mallopt as `minitorch train` does.")


def _pct(x: Any) -> str:
    return f"{x:.0%}" if P.is_number(x) else "?"


def _ms_text(row: dict, impl: str) -> str:
    v = (row.get("ms_per_step") or {}).get(impl)
    ci = (row.get("ms_ci") or {}).get(impl)
    if not P.is_number(v):
        return "—"
    if isinstance(ci, list) and len(ci) == 2 and all(P.is_number(x) for x in ci):
        return f"{P.fmt(float(v))} [{P.fmt(float(ci[0]))}, {P.fmt(float(ci[1]))}]"
    return P.fmt(float(v))


def _target_cell(row: dict, targets: Any) -> Any:
    target = row.get("target") or (targets.get(f"{row.get('preset')}/{row.get('dtype')}")
                                   if isinstance(targets, dict) else None)
    if not isinstance(target, dict):
        return ""
    ok, why = status(row)
    if not ok:
        return P.cell(f"no verdict: {why}", "warn")
    v = verdicts(row)
    text = ", ".join(f"{v.get(p, '?')} ≤ {t}× {NAMES.get(p, p)}" for p, t in target.items())
    values = set(v.values())
    cls = "pass" if values == {"meets"} else "fail" if "misses" in values else "warn"
    return P.cell(text, cls)


def machine_of(run: PeerRun) -> str:
    """The machine a run was measured on: its machine name, else its CPU model, else '?'."""
    info = (run.meta.get("info") or {}).get("minitorch") or {}
    if not isinstance(info, dict):
        info = {}
    return str(run.meta.get("machine") or info.get("machine") or info.get("cpu") or "?")


def machines_table(runs: list[PeerRun]) -> dict | None:
    """One column per machine (the latest run of each), one row per configuration and peer:
    ratios from different machines side by side, never in one series."""
    latest: dict[str, PeerRun] = {}
    for run in runs:
        latest.setdefault(machine_of(run), run)
    if len(latest) < 2:
        return None
    machines = sorted(latest)
    keys: list[tuple] = []
    cells: dict[tuple, dict[str, Any]] = {}
    for m in machines:
        for r in latest[m].rows:
            for p in ("torch", "numpy"):
                if ratio(r, p) is None:
                    continue
                key = (r.get("preset"), r.get("dtype"), r.get("malloc"), NAMES[p])
                if key not in cells:
                    keys.append(key)
                    cells[key] = {}
                cells[key][m] = _ratio_cell(r, p, "wall")
    body = [[*k, *[cells[k].get(m, P.cell("—")) for m in machines]] for k in keys]
    return P.table(f"minitorch ÷ peer per machine ({len(machines)} machines)",
                   ["preset", "dtype", "allocator", "peer", *machines], body,
                   note="Wall-clock ratios with 95 % intervals, the latest run of each machine "
                        "(machine = CPU-derived name). Ratios depend on the CPU, so machines are "
                        "compared side by side and never averaged. Greyed cells: not measured "
                        "reliably (hover for why).")


def _history_table(runs: list[PeerRun]) -> dict:
    body = []
    for run in runs:
        for r in run.rows:
            ms = r.get("ms_per_step") or {}
            ok, why = status(r)
            cls = "num" if ok else "num muted"
            body.append([run.name, machine_of(run), run.threads, run.commit, r.get("preset"),
                         r.get("dtype"), r.get("malloc", ""),
                         *[P.cell(ms.get(i), cls) for i in NAMES],
                         *[P.cell(_x_ci(r, p, c), cls) for p in ("torch", "numpy")
                           for c in ("wall", "cpu")],
                         P.cell("yes" if ok else why, "" if ok else "warn")])
    return P.table(f"Earlier and labelled peer runs ({len(runs)} run{'s' * (len(runs) > 1)})",
                   ["run", "machine", "threads", "commit", "preset", "dtype", "allocator",
                    "minitorch ms/step", "PyTorch ms/step", "NumPy ms/step",
                    "÷ PyTorch, wall", "÷ PyTorch, CPU", "÷ NumPy, wall", "÷ NumPy, CPU",
                    "measured reliably"], body,
                   collapsed=True,
                   note="bench.json keeps the latest run per thread count and every run saved "
                        "with `compare_peers --label`; commit = the minitorch that was timed. "
                        "Compare rows only at equal threads: on a 2-core machine a 2-thread run "
                        "competes with everything else.")
