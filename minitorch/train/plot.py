"""Loss-curve PNG from metrics rows. matplotlib is optional (not a runtime dependency): without
it the plot is skipped with a message, and training is unaffected."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plot_metrics(rows: list[dict[str, Any]], path: str | Path, title: str = "") -> str:
    """Per-step training loss (faint) plus eval train/val means, saved to `path`.

    Returns a one-line message saying where the plot went, or why it was skipped.
    """
    try:
        from matplotlib.figure import Figure  # no pyplot: no global state, a faster import
    except ImportError:
        return "loss plot skipped: matplotlib is not installed (pip install matplotlib)"
    steps = [r for r in rows if r.get("kind") == "step" and r.get("loss") is not None]
    evals = [r for r in rows if r.get("kind") == "eval"]
    fig = Figure(figsize=(7, 4), dpi=110)
    ax = fig.add_subplot()
    if steps:
        ax.plot([r["step"] for r in steps], [r["loss"] for r in steps], color="0.75", lw=0.6,
                label="batch loss")
    for split, color in (("train", "tab:blue"), ("val", "tab:orange")):
        ax.plot([r["step"] for r in evals], [r[split] for r in evals], "o-", ms=3, color=color,
                label=f"{split} (eval mean)")
    _finish(fig, ax, title, path)
    return f"loss plot written to {path}"


def plot_runs(runs: dict[str, list[dict[str, Any]]], path: str | Path, title: str = "") -> str:
    """Eval train (dashed) and val (solid) curves of several runs on one axis, saved to `path`.

    Args:
        runs: label -> that run's metrics rows (read_metrics(out_dir)).
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return "comparison plot skipped: matplotlib is not installed"
    fig = Figure(figsize=(7, 4), dpi=110)
    ax = fig.add_subplot()
    values = [r[k] for rows in runs.values() for r in rows if r.get("kind") == "eval"
              for k in ("train", "val")]
    if values:  # the untrained loss (~4.2) would flatten the part worth comparing
        ax.set_ylim(min(values) - 0.05, min(max(values), 3.0))
    for i, (label, rows) in enumerate(runs.items()):
        evals = [r for r in rows if r.get("kind") == "eval"]
        color = f"C{i}"
        ax.plot([r["step"] for r in evals], [r["val"] for r in evals], "-", color=color,
                label=f"{label} val")
        ax.plot([r["step"] for r in evals], [r["train"] for r in evals], "--", color=color,
                label=f"{label} train")
    _finish(fig, ax, title, path)
    return f"comparison plot written to {path}"


def _finish(fig, ax, title: str, path: str | Path) -> None:
    """Shared labels and styling, then save (Figure picks the Agg canvas for .png by itself)."""
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
