"""Summarize finished runs as markdown loss tables (and optionally one comparison plot).

    python -m minitorch.train.summary runs/ts-seed runs/ts-better --plot docs/recipes-curves.png

Reads only each run folder's config.json and metrics.jsonl; it never trains. A bad input is one
line, `minitorch.train.summary: error: ...`, exit status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .arguments import Parser, check_writable_file
from .loop import read_metrics
from .plot import plot_runs

PROG = "minitorch.train.summary"
EVAL_KEYS = {"step", "train", "val", "time"}  # what the trainer's eval rows hold


class SummaryError(ValueError):
    """A run folder (or a flag) this tool cannot summarize; the message names it and why."""


def _run_config(out: Path) -> dict[str, Any]:
    """The run's config.json, checked to hold what a summary reads (SummaryError otherwise)."""
    if not out.is_dir():
        raise SummaryError(f"{out}: no such run folder" if not out.exists() else
                           f"{out} is a file, not a run folder (give a train --out folder)")
    path = out / "config.json"
    if not path.is_file():
        raise SummaryError(f"{out}: no config.json in it (not a train --out folder, or the run "
                           "was refused before it started)")
    try:
        cfg = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SummaryError(f"{out}: cannot read {path}: {e}") from None
    if not (isinstance(cfg, dict) and isinstance(cfg.get("train"), dict)
            and isinstance(cfg.get("params"), int)):
        raise SummaryError(f"{out}: {path} has no 'train' config and 'params' count (not "
                           "written by minitorch train?)")
    return cfg


def _metrics(out: Path) -> list[dict[str, Any]]:
    """The run's metrics rows, every line a JSON object (SummaryError naming what is not)."""
    path = out / "metrics.jsonl"
    try:
        return read_metrics(out, strict=True)
    except (OSError, ValueError) as e:
        raise SummaryError(f"{out}: cannot read {path}: {getattr(e, 'strerror', None) or e}") \
            from None


def run_summary(out_dir: str | Path, steps: list[int]) -> dict[str, Any]:
    """Eval losses at `steps` (the eval row at each step), final row and wall time of one run.

    Raises:
        SummaryError: the folder is not a run, has no evaluations, or none at some of `steps`.
    """
    out = Path(out_dir)
    cfg = _run_config(out)
    evals = {r["step"]: r for r in _metrics(out) if r.get("kind") == "eval"
             and EVAL_KEYS <= r.keys()}
    if not evals:
        raise SummaryError(f"{out}: no evaluation rows in {out / 'metrics.jsonl'} (the run "
                           "stopped before its first evaluation, or has no metrics.jsonl)")
    missing = [s for s in steps if s not in evals]
    if missing:
        have = ",".join(map(str, sorted(evals)))
        raise SummaryError(f"{out}: no evaluation at step{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(map(str, missing))}; it has evaluations at steps {have} "
                           f"(--steps chooses the table's steps, e.g. --steps {have})")
    last = evals[max(evals)]
    return {"run": str(out), "recipe_config": cfg["train"], "params": cfg["params"],
            "table": [{"step": s, "train": evals[s]["train"], "val": evals[s]["val"]}
                      for s in steps],
            "final": {"step": last["step"], "train": last["train"], "val": last["val"]},
            "elapsed_s": last["time"]}


def markdown_table(summary: dict[str, Any]) -> str:
    lines = ["| step | train loss | val loss |", "|---:|---:|---:|"]
    lines += [f"| {r['step']} | {r['train']:.4f} | {r['val']:.4f} |" for r in summary["table"]]
    return "\n".join(lines)


def _steps(raw: str) -> list[int]:
    try:
        steps = [int(s) for s in raw.split(",")]
    except ValueError:
        raise SummaryError(f"--steps {raw!r}: expected comma-separated step numbers, e.g. "
                           "--steps 0,1000,2000") from None
    return steps


def _write_outputs(json_path: str | None, summaries: list[dict[str, Any]],
                   plot_path: str | None, runs: dict[str, list[dict[str, Any]]]) -> None:
    """Write --json and --plot; an OSError is the SummaryError 'cannot write <path>: ...'."""
    path = json_path
    try:
        if json_path:
            Path(json_path).write_text(json.dumps(summaries, indent=1) + "\n")
        if plot_path:
            path = plot_path
            print(plot_runs(runs, plot_path, title="Tiny Shakespeare, eval mean loss"))
    except OSError as e:
        raise SummaryError(f"cannot write {e.filename or path}: {e.strerror or e}") from None


def main(argv: list[str] | None = None) -> int:
    ap = Parser(prog=PROG, description=__doc__.split("\n")[0], allow_abbrev=False)
    ap.add_argument("runs", nargs="+", help="run folders (train --out)")
    ap.add_argument("--steps", default="0,1000,2000,3000,3999",
                    help="comma-separated steps of the table (each must have an evaluation)")
    ap.add_argument("--plot", help="also write a comparison PNG here")
    ap.add_argument("--json", help="also write the summaries as JSON here")
    args = ap.parse_args(argv)
    try:
        steps = _steps(args.steps)
        for flag, path in (("--plot", args.plot), ("--json", args.json)):
            if path is not None:
                check_writable_file(path, flag, SummaryError)
        summaries = [run_summary(r, steps) for r in args.runs]  # every run checked first
        runs = {Path(r).name: _metrics(Path(r)) for r in args.runs} if args.plot else {}
        for s in summaries:
            print(f"### {s['run']} ({s['params']:,} params, {s['elapsed_s']:.0f} s in the "
                  "loop)\n")
            print(markdown_table(s) + "\n")
        _write_outputs(args.json, summaries, args.plot, runs)
    except SummaryError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
