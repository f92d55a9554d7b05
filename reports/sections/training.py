"""Training section: per run folder (metrics.jsonl, samples.json, config.json, loss.png) the loss
curves, samples before/after, parameter count and config; attention heatmaps from trace.json.
Runs are the main job's; others (--include-runs) are marked, and each run carries its status."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from .. import figures
from .. import parts as P
from ..inputs import Inputs, relative

HOW = "run `make report` (trains on the embedded corpus) or `python -m minitorch train --out DIR`"
_PARAM_KEYS = ("params", "n_params", "num_params", "param_count", "n_parameters", "parameters")
FINISHED, STOPPED, NO_METRICS, UNREADABLE = "finished", "stopped early", "no metrics", "unreadable"
STATUS_CLASS = {FINISHED: "pass", STOPPED: "warn", NO_METRICS: "fail", UNREADABLE: "fail"}
OTHER = "--include-runs"  # where a run not from the main job came from


def build(inputs: Inputs) -> dict:
    out: list[dict] = []
    summary: dict[str, Any] = {"runs": {}}
    if not inputs.run_dirs:
        out.append(P.missing("Training runs", f"No training run folder (runs/<name>/ with "
                             f"metrics.jsonl) under {inputs.artifacts / 'runs'}; {HOW}."))
    broken = []
    for run, other in [(r, False) for r in inputs.run_dirs] + [(r, True) for r in
                                                                 inputs.other_runs]:
        name = relative(run) if other else run.name  # others by path: names may repeat
        status, detail = run_status(run)
        if status in (NO_METRICS, UNREADABLE):  # listed as broken, never shown as a result
            broken.append([name, OTHER if other else "main job",
                           P.cell(status, STATUS_CLASS[status]), detail])
            inputs.note(f"{name}/" if other else f"runs/{name}/", status, detail)
            continue
        out += _run_parts(inputs, run, summary, name, other, (status, detail))
    if broken:
        out.insert(0, P.table(f"Run folders with no results ({len(broken)})",
                              ["run", "from", "status", "what the folder holds"], broken,
                              note="Not shown as results: a run that never wrote a metric or "
                                   "whose files cannot be read."))
    if summary["runs"]:
        out.insert(0, _glance(summary["runs"]))
    out += _attention_parts(inputs.json("trace.json"))
    return {"id": "training", "title": "Training", "parts": out, "summary": summary}


def run_status(run: Path) -> tuple[str, str]:
    """(status, detail) of a run folder from its files alone: finished (the trainer's "finished"
    row, or the checkpoint at the config's iters), stopped early, no metrics or unreadable."""
    held = ", ".join(sorted(p.name for p in run.iterdir())) if run.is_dir() else ""
    config, bad = _json_object(run / "config.json")
    ckpt, bad_ckpt = _json_object(run / "checkpoint.json")
    if bad or bad_ckpt:
        return UNREADABLE, bad or bad_ckpt
    if not (run / "metrics.jsonl").is_file():
        return NO_METRICS, f"no metrics.jsonl; the folder holds {held or 'nothing'}"
    try:
        rows, torn = read_metrics(run / "metrics.jsonl")
    except (OSError, ValueError) as e:
        return UNREADABLE, f"metrics.jsonl: {e}"
    if not rows:
        return ((UNREADABLE, f"none of the {torn} line(s) of metrics.jsonl parse") if torn else
                (NO_METRICS, "metrics.jsonl is empty (stopped before its first step)"))
    train = (config or {}).get("train", config or {})
    iters = P.lookup(train if isinstance(train, dict) else {}, "iters")
    iters = iters if P.is_number(iters) else P.lookup(P.lookup(ckpt, "config"), "iters")
    step = P.lookup(ckpt, "step")  # steps done; a "step" row is numbered from 0
    if not P.is_number(step):
        step = max((m["step"] + (m.get("kind") == "step") for m in rows
                    if P.is_number(m.get("step"))), default=None)
    where = f"step {P.fmt(step)}" + (f" of {P.fmt(iters)}" if P.is_number(iters) else "")
    if rows[-1].get("kind") == "finished" or (P.is_number(step) and P.is_number(iters)
                                               and step >= iters):
        return FINISHED, where
    diverged = next((m for m in reversed(rows) if m.get("kind") == "diverged"), None)
    return STOPPED, where + (f"; diverged: {diverged.get('reason')}" if diverged else "")


def _json_object(path: Path) -> tuple[dict | None, str]:
    """(the JSON object in path or None, what is wrong with it or ""); a missing file is fine."""
    if not path.exists():
        return None, ""
    try:
        payload = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return None, f"{path.name}: {e}"
    return (payload, "") if isinstance(payload, dict) else (None, f"{path.name}: not an object")


def read_metrics(path: Path) -> tuple[list[dict], int]:
    """The JSON lines of a metrics file, and how many lines could not be parsed."""
    rows, bad = [], 0
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(row, dict):
            rows.append(row)
        else:
            bad += 1
    return rows, bad


def _run_parts(inputs: Inputs, run: Path, summary: dict, name: str, other: bool,
               status: tuple[str, str]) -> list[dict]:
    key = name if other else f"runs/{name}"  # its files' labels in the inputs table
    text = f"Folder {relative(run)}; {status[0]}, {status[1]}."
    if other:
        text = (f"Not a run of the main job: shown because it was asked for "
                f"(--include-runs). {text}")
    out: list[dict] = [P.note(f"Run: {name} ({status[0]}"
                              + (", not from the main job)" if other else ")"), text)]
    config = inputs.json_file(run / "config.json", f"{key}/config.json")
    metrics: list[dict] = []
    if (run / "metrics.jsonl").exists():
        metrics, bad = read_metrics(run / "metrics.jsonl")
        inputs.text(run / "metrics.jsonl", f"{key}/metrics.jsonl")
        if bad:
            out.append(P.error(f"{name}: metrics", f"{bad} line(s) of metrics.jsonl could not be "
                               "parsed (an interrupted run?); the rest are shown."))
    else:
        inputs.note(f"{key}/metrics.jsonl", "missing", str(run / "metrics.jsonl"))
    samples = inputs.json_file(run / "samples.json", f"{key}/samples.json")
    out += _loss_parts(name, metrics, run)
    _, evals = split_metrics(metrics)
    last_val = _val(evals[-1]) if evals else None
    last_train = _train(evals[-1]) if evals else None
    n_params = _param_count(config, metrics, samples)
    train = config.get("train", config) if isinstance(config, dict) else {}
    best = min(((v, m.get("step")) for m in evals if (v := _val(m)) is not None), default=None)
    summary["runs"][name] = {"val_loss": last_val, "train_loss": last_train,
                             "steps": max((P.as_float(m.get("step")) or 0 for m in metrics),
                                          default=None),
                             "n_params": n_params, "best_val": best, "folder": str(run),
                             "seconds": P.as_float(P.lookup(evals[-1], "time")) if evals
                             else None,
                             "config": train if isinstance(train, dict) else {},
                             "status": status, "other": other}
    out += _sample_parts(name, samples)
    items = [("parameters", n_params if n_params is not None else "unknown (not in config or "
              "metrics)")]
    if isinstance(config, dict):
        items += [(k, v) for k, v in P.flat_row(config).items()]
        out.append(P.kv(f"{name}: parameter count and full config (config.json)", items,
                        collapsed=True))
    else:
        out.append(P.kv(f"{name}: parameter count", items))
        out.append(P.missing(f"{name}: config", f"No readable config.json in {run}."))
    return out


_GLANCE = [("preset", "preset"), ("dtype", "dtype"), ("optimizer", "optimizer"), ("lr", "lr"),
           ("schedule", "schedule"), ("iters", "iters"), ("batch_size", "batch")]


def _glance(runs: dict[str, dict]) -> dict:
    """One row per run: the settings that differ most often, size, losses and time."""
    rows = []
    for name, r in runs.items():
        cfg = r["config"]
        best = r["best_val"]
        data = cfg.get("data")
        status = P.cell(r["status"][0] + (f" ({OTHER})" if r["other"] else ""),
                        STATUS_CLASS[r["status"][0]], title=r["status"][1])
        rows.append([name, status,
                     *[P.cell(cfg.get(k), "num" if P.is_number(cfg.get(k)) else "")
                             for k, _ in _GLANCE],
                     P.cell(r["n_params"], "num"), P.cell(r["steps"], "num"),
                     P.cell(r["train_loss"], "num"), P.cell(r["val_loss"], "num"),
                     P.cell(f"{best[0]:.4g} (step {P.fmt(best[1])})" if best else None, "num"),
                     P.cell(r["seconds"], "num"),
                     P.cell(Path(str(data)).name if data else "embedded corpus",
                            title=str(data or ""))])
    return P.table("Training runs at a glance", ["run", "status",
                                                 *[label for _, label in _GLANCE],
                                                 "parameters", "last step", "train loss",
                                                 "val loss", "best val loss", "seconds",
                                                 "data"], rows,
                   note="From each run folder's config.json and metrics.jsonl; losses are the "
                        "last evaluation's (cross-entropy, nats/token), seconds the time at the "
                        "last evaluation. Status: finished, or stopped early (the step it "
                        "reached on hover); a run marked --include-runs is not the main job's. "
                        "Each run's curves, samples and full config follow.")


def split_metrics(metrics: list[dict]) -> tuple[list[dict], list[dict]]:
    """(per-step rows, evaluation rows). The trainer tags rows with kind "step" / "eval"; untagged
    rows count as evaluations when they carry a val loss."""
    steps, evals = [], []
    for m in metrics:
        kind = str(m.get("kind", "")).lower()
        if kind == "eval" or (not kind and _val(m) is not None):
            evals.append(m)
        elif P.is_number(m.get("loss")) or P.is_number(m.get("train_loss")):
            steps.append(m)
    return steps, evals


def _val(m: dict) -> float | None:
    return P.as_float(P.lookup(m, "val_loss", "val"))


def _train(m: dict) -> float | None:
    return P.as_float(P.lookup(m, "train_loss", "train"))


def _loss_parts(name: str, metrics: list[dict], run: Path) -> list[dict]:
    steps, evals = split_metrics(metrics)
    series = []
    if steps:
        pts = [(m.get("step", i), P.as_float(P.lookup(m, "loss", "train_loss")))
               for i, m in enumerate(steps)]
        series.append(("train loss (each step's batch)", [p[0] for p in pts],
                       [p[1] for p in pts]))
    for label, get in (("train loss (eval)", _train), ("val loss (eval)", _val)):
        pts = [(m.get("step"), get(m)) for m in evals if get(m) is not None]
        if pts:
            series.append((label, [p[0] for p in pts], [p[1] for p in pts]))
    if series:
        out = [P.plot(f"{name}: loss curves", figures.lines(series, "step", "cross-entropy "
                      "(nats/token)", markers=len(steps) < 2),
                      note="Eval: mean loss over the same held-out batches at every "
                           "evaluation. Per-step: the loss of that step's training batch.")]
        if evals:
            out.append(P.generic_table(f"{name}: evaluations", evals, collapsed=len(evals) > 12))
        return out
    if (run / "loss.png").exists():
        return [P.image(f"{name}: loss plot (loss.png)", (run / "loss.png").read_bytes(),
                        f"loss curve of run {name}",
                        note="metrics.jsonl has no loss values, so the trainer's own plot is "
                             "shown.")]
    return [P.missing(f"{name}: loss curves", f"No metrics.jsonl with loss values in {run} "
                      "(a run that has not reached its first evaluation yet?).")]


def _sample_parts(name: str, samples: Any) -> list[dict]:
    if samples is None:
        return [P.missing(f"{name}: samples", "No samples.json (text generated before and after "
                          "training).")]
    texts: list[tuple[str, str]] = []
    if isinstance(samples, dict):
        for k, v in samples.items():
            if isinstance(v, str):
                texts.append((k, v))
            elif isinstance(v, dict):
                inner = P.lookup(v, "text", "sample", "output")
                if isinstance(inner, str):
                    extra = ", ".join(f"{a}={b}" for a, b in v.items() if a != "text"
                                      and P._is_scalar(b))
                    texts.append((f"{k} ({extra})" if extra else k, inner))
    elif isinstance(samples, list):
        texts = [(str(i), s if isinstance(s, str) else json.dumps(s)) for i, s in
                 enumerate(samples)]
    if not texts:
        return [P.error(f"{name}: samples", "samples.json holds no text.")]
    return [P.row_of([P.pre(f"{name}: sample {k}", v) for k, v in texts])]


def _param_count(*sources: Any) -> int | None:
    for src in sources:
        for row in (src if isinstance(src, list) else [src]):
            if isinstance(row, dict):
                for path, v in P.scalars(row):
                    if path.rsplit(".", 1)[-1].lower() in _PARAM_KEYS and P.is_number(v):
                        return int(v)
    return None


# ---------------------------------------------------------------- attention heatmaps


def attention_maps(trace: Any) -> tuple[list[tuple[int, int, list[list[float]]]], list[str]]:
    """(layer, head, T×T probabilities) from trace.json's attention entry, in any of the layouts
    a tracer is likely to write: rows {layer, head, probs}, a dict per layer, or nested arrays
    shaped (layer, head, T, T) with an optional batch axis."""
    att = P.lookup(trace, "attention", "attn", "attention_probs", "attentions")
    tokens = P.lookup(trace, "tokens", "chars", "input_tokens")
    if not isinstance(tokens, list):
        text = P.lookup(trace, "text", "input")
        tokens = list(text) if isinstance(text, str) else []
    mats: list[tuple[int, int, list[list[float]]]] = []
    if isinstance(att, dict):
        att = [{"layer": i, "probs": v} if not isinstance(v, dict) else {"layer": i, **v}
               for i, v in enumerate(att.values())]
    if isinstance(att, list) and att and all(isinstance(a, dict) for a in att):
        for i, a in enumerate(att):
            layer = int(P.lookup(a, "layer", default=i))
            probs = P.lookup(a, "probs", "p", "weights", "attention", "att", "matrix")
            head = P.lookup(a, "head")
            mats += _split_heads(layer, head, probs)
    elif isinstance(att, list):
        arr = np.asarray(att, dtype=float)
        if arr.ndim == 5:
            arr = arr[:, 0]
        if arr.ndim == 3:
            arr = arr[None]
        if arr.ndim == 4:
            mats = [(i, h, arr[i, h].tolist()) for i in range(arr.shape[0])
                    for h in range(arr.shape[1])]
    return mats, [_show(t) for t in tokens]


def _split_heads(layer: int, head: Any, probs: Any) -> list[tuple[int, int, list[list[float]]]]:
    arr = np.asarray(probs, dtype=float)
    if arr.ndim == 2:
        return [(layer, int(head) if head is not None else 0, arr.tolist())]
    if arr.ndim == 4:
        arr = arr[0]
    if arr.ndim == 3:
        return [(layer, h, arr[h].tolist()) for h in range(arr.shape[0])]
    raise ValueError(f"attention probabilities of layer {layer} have shape {arr.shape}; "
                     "expected (T, T), (heads, T, T) or (batch, heads, T, T)")


def _show(token: Any) -> str:
    text = str(token)
    return {" ": "␣", "\n": "⏎", "\t": "⇥"}.get(text, text)


def _attention_parts(trace: Any) -> list[dict]:
    if trace is None:
        return [P.missing("Attention heatmaps", "No trace.json (attention probabilities per "
                          "layer and head from minitorch.debug on the trained model); run "
                          "`make report`.")]
    out = []
    try:
        mats, tokens = attention_maps(trace)
    except (ValueError, TypeError) as e:
        mats, tokens = [], []
        out.append(P.error("Attention heatmaps", f"trace.json attention could not be read: {e}"))
    if mats:
        text = "".join(t if t not in ("␣", "⏎") else {"␣": " ", "⏎": "\n"}[t] for t in tokens)
        source = P.lookup(trace, "checkpoint", "run", "model")
        out.append(P.plot("Attention probabilities per layer and head",
                          figures.heatmap_grid(mats, tokens),
                          note=f"Rows: query position; columns: key position (causal, so the "
                               f"upper triangle is 0). Input: {text!r}"
                               + (f"; model: {source}" if source else "")))
    elif not out:
        out.append(P.missing("Attention heatmaps", "trace.json has no attention probabilities."))
    for path, rows in P.dict_lists({k: v for k, v in trace.items() if k not in
                                    ("attention", "attn", "attention_probs", "attentions")}
                                   if isinstance(trace, dict) else trace):
        out.append(P.generic_table(f"Trace: {path or 'ops'}", rows, collapsed=True))
    return out
