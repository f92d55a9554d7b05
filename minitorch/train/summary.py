"""Summarize finished runs as markdown loss tables (and optionally one comparison plot).

    python -m minitorch.train.summary runs/ts-seed runs/ts-better --plot docs/recipes-curves.png

Reads only each run folder's config.json and metrics.jsonl; it never trains.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .loop import read_metrics
from .plot import plot_runs


def run_summary(out_dir: str | Path, steps: list[int]) -> dict[str, Any]:
    """Eval losses at `steps` (the eval row at each step), final row and wall time of one run."""
    out = Path(out_dir)
    cfg = json.loads((out / "config.json").read_text())
    evals = {r["step"]: r for r in read_metrics(out) if r["kind"] == "eval"}
    missing = [s for s in steps if s not in evals]
    if missing:
        raise ValueError(f"{out}: no evaluation at steps {missing} (have {sorted(evals)})")
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", help="run folders (train --out)")
    ap.add_argument("--steps", default="0,1000,2000,3000,3999", help="comma-separated steps")
    ap.add_argument("--plot", help="also write a comparison PNG here")
    ap.add_argument("--json", help="also write the summaries as JSON here")
    args = ap.parse_args(argv)
    steps = [int(s) for s in args.steps.split(",")]
    summaries = [run_summary(r, steps) for r in args.runs]
    for s in summaries:
        print(f"### {s['run']} ({s['params']:,} params, {s['elapsed_s']:.0f} s in the loop)\n")
        print(markdown_table(s) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(summaries, indent=1) + "\n")
    if args.plot:
        runs = {Path(r).name: read_metrics(r) for r in args.runs}
        print(plot_runs(runs, args.plot, title="Tiny Shakespeare, eval mean loss"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
