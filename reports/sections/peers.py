"""minitorch vs PyTorch eager vs hand-written NumPy, from the peer tables in bench.json: the
headline figure for the summary card, the latest run's plot and table, and every earlier or
labelled run in one table. Reads what benchmarks/compare_peers.py writes; computes no timing.
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
        if self.meta.get("rounds"):
            parts.append(f"{self.meta['rounds']} rounds of {self.meta.get('steps', '?')} steps")
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


def _x(v: float | None) -> str:
    return f"{v:.2f}×" if v is not None else "—"


def describe(row: dict) -> str:
    alloc = ALLOCATOR.get(str(row.get("malloc")), f"allocator {row.get('malloc', '?')}")
    return f"{row.get('preset', '?')} preset, {row.get('dtype', '?')}, {alloc}"


def headline(runs: list[PeerRun]) -> dict | None:
    """{lines, sub} for the summary card: the latest run's row closest to `minitorch train`."""
    if not runs:
        return None
    latest = runs[0]
    row = representative(latest.rows)
    if row is None:
        return None
    peers = [p for p in NAMES if p != "minitorch" and ratio(row, p) is not None]
    lines = [f"minitorch / {NAMES[p]}: {_x(ratio(row, p))} (wall), {_x(ratio(row, p, 'cpu'))} "
             "(CPU)" for p in peers]
    is_default = all(row.get(k) == v for k, v in TRAIN_DEFAULT.items())
    shape = f", batch {row['batch']} × {row['block']} tokens" if "batch" in row else ""
    sub = (f"{latest.name.capitalize()}: {describe(row)}"
           + (" (as `minitorch train` runs)" if is_default else "")
           + f"{shape}, {latest.context()}. Median step time, minitorch's ÷ the peer's: "
           "below 1× = minitorch faster.")
    load = _load(latest.rows)
    cores = ((latest.meta.get("info") or {}).get("minitorch") or {}).get("cores")
    if load is not None and P.is_number(cores) and load > cores:
        sub += f" Busy machine (load {load:.1f} on {cores} cores): read as rough."
    for other in runs[1:]:
        if other.path.startswith("peers_by_threads") and other.threads != latest.threads:
            same = [r for r in other.rows if all(r.get(k) == row.get(k)
                                                 for k in ("preset", "dtype", "malloc"))]
            if same:
                figures_ = ", ".join(f"{_x(ratio(same[0], p))} {NAMES[p]}" for p in peers)
                sub += (f" With {threads_text(other.threads)} (commit {other.commit}): "
                        f"{figures_} (wall).")
    return {"lines": lines, "sub": sub}


def _load(rows: list[dict]) -> float | None:
    loads = [float(r["loadavg_1min"]) for r in rows if P.is_number(r.get("loadavg_1min"))]
    return max(loads) if loads else None


def parts(bench: Any, summary: dict) -> list[dict]:
    """The latest run's plot and table, then every other stored run in one collapsed table."""
    runs = find_runs(bench)
    if not runs:
        return []
    summary["step_time"] = headline(runs)
    latest, out = runs[0], []
    out.append(_ratio_plot(latest))
    targets = P.lookup(latest.meta, "targets")
    out.append(_run_table(latest, targets))
    out.append(P.generic_table(f"Peer comparison, {latest.name}: every field as in bench.json",
                               latest.rows, collapsed=True, max_cols=40))
    if len(runs) > 1:
        out.append(_history_table(runs[1:]))
    return out


def _category(r: dict) -> str:
    return f"{r.get('preset', '?')} · {r.get('dtype', '?')} · {r.get('malloc', '?')} allocator"


def _ratio_plot(run: PeerRun) -> dict:
    cats = [_category(r) for r in run.rows]
    peers = [p for p in NAMES if p != "minitorch" and any(ratio(r, p) is not None
                                                          for r in run.rows)]
    groups, spreads = {}, {}
    for p in peers:
        for clock, label in (("wall", "wall clock"), ("cpu", "CPU time")):
            name = f"vs {NAMES[p]}, {label}"
            groups[name] = [ratio(r, p, clock) for r in run.rows]
            spreads[name] = [(r if clock == "wall" else r.get("cpu") or {}).get(
                f"ratio_vs_{p}_iqr") for r in run.rows]
    return P.plot(f"Step time, minitorch ÷ peer ({run.name}: {run.context()})",
                  figures.bars(cats, groups, "minitorch time ÷ peer time (lower is better)",
                               ref=1.0, ref_label="as fast", spreads=spreads),
                  note="One training step (forward, loss, backward, optimizer) with the same "
                       "batch, data, dtype and threads in all three; median over interleaved "
                       "rounds; whiskers: interquartile range. Below 1 = minitorch is faster. "
                       "CPU time counts only the process's own CPU, so it suffers less from "
                       "other load on the machine.")


def _ratio_cell(row: dict, peer: str, clock: str) -> dict:
    v = ratio(row, peer, clock)
    src = row if clock == "wall" else row.get("cpu") or {}
    iqr = src.get(f"ratio_vs_{peer}_iqr") if isinstance(src, dict) else None
    spread = (f" [{iqr[0]:.2f}, {iqr[1]:.2f}]" if isinstance(iqr, list) and len(iqr) == 2
              and all(P.is_number(x) for x in iqr) else "")
    return P.cell(f"{v:.2f}{spread}" if v is not None else "—", "num")


def _run_table(run: PeerRun, targets: Any) -> dict:
    impls = [i for i in NAMES if any(i in (r.get("ms_per_step") or {}) for r in run.rows)]
    peers = [i for i in impls if i != "minitorch"]
    body = []
    for r in run.rows:
        ms = r.get("ms_per_step") or {}
        line: list[Any] = [r.get("preset"), r.get("dtype"), r.get("malloc", "")]
        line += [P.cell(ms.get(i), "num") for i in impls]
        line += [_ratio_cell(r, p, clock) for p in peers for clock in ("wall", "cpu")]
        line.append(_target_cell(r, targets))
        body.append(line)
    columns = ["preset", "dtype", "allocator", *[f"{NAMES[i]} ms/step" for i in impls],
               *[f"minitorch ÷ {NAMES[p]}, {c}" for p in peers
                 for c in ("wall [IQR]", "CPU [IQR]")], "target (wall ratios)"]
    load = _load(run.rows)
    return P.table(f"Step time per configuration ({run.name}: {run.context()})", columns, body,
                   note="ms/step = median wall time of one training step. Allocator: glibc's "
                        "defaults, or tuned with mallopt as `minitorch train` does. Target: the "
                        "goal set for the seed preset."
                        + (f" 1-minute load average during the run: up to {load:.1f}."
                           if load is not None else ""))


def _target_cell(row: dict, targets: Any) -> Any:
    target = targets.get(f"{row.get('preset')}/{row.get('dtype')}") if isinstance(
        targets, dict) else None
    if not isinstance(target, dict):
        return ""
    ok = all(ratio(row, p) is not None and ratio(row, p) <= t for p, t in target.items())
    return P.cell(("meets " if ok else "misses ") + ", ".join(
        f"≤ {t}× {NAMES.get(p, p)}" for p, t in target.items()), "pass" if ok else "fail")


def _history_table(runs: list[PeerRun]) -> dict:
    body = []
    for run in runs:
        for r in run.rows:
            ms = r.get("ms_per_step") or {}
            body.append([run.name, run.threads, run.commit, r.get("preset"), r.get("dtype"),
                         r.get("malloc", ""), *[P.cell(ms.get(i), "num") for i in NAMES],
                         *[P.cell(_x(ratio(r, p, c)), "num") for p in ("torch", "numpy")
                           for c in ("wall", "cpu")]])
    return P.table(f"Earlier and labelled peer runs ({len(runs)} run{'s' * (len(runs) > 1)})",
                   ["run", "threads", "commit", "preset", "dtype", "allocator",
                    "minitorch ms/step", "PyTorch ms/step", "NumPy ms/step",
                    "÷ PyTorch, wall", "÷ PyTorch, CPU", "÷ NumPy, wall", "÷ NumPy, CPU"], body,
                   collapsed=True,
                   note="bench.json keeps the latest run per thread count and every run saved "
                        "with `compare_peers --label`; commit = the minitorch that was timed. "
                        "Compare rows only at equal threads: on a 2-core machine a 2-thread run "
                        "competes with everything else.")
