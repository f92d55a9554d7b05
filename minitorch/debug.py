"""Execution debugger: trace one forward/backward of a model through the engine's hooks.

Records every op in order (module path, shapes, dtype, value statistics, time), the backward
edges with gradient norms per node and per parameter, and each attention layer's probabilities.
It only reads: the model's logits and gradients are bit-identical with and without tracing, and
no hook stays installed afterwards (tested). Output: a text table, or a JSON-ready dict.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .engine import Tensor, runtime


def value_stats(a: np.ndarray) -> dict[str, Any]:
    """mean/std/min/max over the finite entries, plus NaN and inf counts (None when none finite)."""
    x = np.asarray(a, dtype=np.float64)
    finite = np.isfinite(x)
    n_nan, n_inf = int(np.isnan(x).sum()), int(np.isinf(x).sum())
    vals = x[finite] if (n_nan or n_inf) else x.ravel()
    if vals.size == 0:
        return {"mean": None, "std": None, "min": None, "max": None, "nan": n_nan, "inf": n_inf}
    return {"mean": float(vals.mean()), "std": float(vals.std()), "min": float(vals.min()),
            "max": float(vals.max()), "nan": n_nan, "inf": n_inf}


@dataclass
class OpRecord:
    """One forward op: `inputs` name each input's source (op index, parameter name or "input")."""

    index: int
    op: str
    module: str
    inputs: list[dict[str, Any]]
    shape: tuple[int, ...]
    dtype: str
    stats: dict[str, Any]
    seconds: float
    grad_norm: float | None = None  # norm of d loss / d output, summed over consumers


@dataclass
class BackwardEdge:
    """One gradient handed from a node (`consumer`, an op index) to its input `input_index`."""

    order: int
    consumer: int | None
    op: str
    input_index: int
    parent: str  # "op:<index>" or "param:<name>" or "input"
    shape: tuple[int, ...]
    grad_norm: float


@dataclass
class AttentionLayer:
    """Probabilities (B, nh, T, T) of one attention layer, with the Q/K/V shapes it used."""

    layer: int
    module: str
    q_shape: tuple[int, ...]
    k_shape: tuple[int, ...]
    v_shape: tuple[int, ...]
    probs: np.ndarray


@dataclass
class Trace:
    ops: list[OpRecord] = field(default_factory=list)
    backward: list[BackwardEdge] = field(default_factory=list)
    params: list[dict[str, Any]] = field(default_factory=list)
    grads: dict[str, np.ndarray] = field(default_factory=dict)
    attention: list[AttentionLayer] = field(default_factory=list)
    logits: np.ndarray | None = None
    loss: float | None = None
    forward_seconds: float = 0.0
    backward_seconds: float = 0.0
    tokens: list[str] | None = None

    def to_dict(self, max_batch: int = 1) -> dict[str, Any]:
        """JSON-safe summary; attention keeps the first `max_batch` sequences, rounded to 1e-6."""
        return {
            "loss": self.loss, "forward_seconds": self.forward_seconds,
            "backward_seconds": self.backward_seconds, "tokens": self.tokens,
            "ops": [asdict(r) for r in self.ops],
            "backward": [asdict(e) for e in self.backward],
            "params": self.params,
            "attention": [{"layer": a.layer, "module": a.module, "q_shape": a.q_shape,
                           "k_shape": a.k_shape, "v_shape": a.v_shape,
                           "probs": np.round(a.probs[:max_batch], 6).tolist()}
                          for a in self.attention],
        }

    def save_json(self, path: str | Path, max_batch: int = 1) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(max_batch)))
        return path

    def table(self, max_rows: int | None = None) -> str:
        return format_trace(self, max_rows)


class _Recorder:
    """The hook pair: forward records ops, backward maps each gradient to its node."""

    def __init__(self, params: dict[int, str]):
        self.trace, self.params, self.stack = Trace(), params, [""]
        self.producer: dict[int, int] = {}  # output's node id -> op index
        self.keep: list[Tensor] = []  # outputs by op index; they and `alive` stay referenced
        self.alive: list[Tensor] = []  # while tracing, so no id() is reused for another node
        self.pending: dict[tuple[str, int, int], list[int]] = {}  # (op, i, input node) -> ops
        self.grad_sum: dict[int, np.ndarray] = {}  # node id -> summed incoming gradient
        self.attention: dict[int, tuple] = {}  # op index -> (q, k, v, probs), each (B, nh, T, .)

    def source(self, t) -> str:
        """Where a tensor (or a graph node from backward) came from: an op, a parameter, input."""
        key = _node_id(t)
        if key in self.producer:
            return f"op:{self.producer[key]}"
        return f"param:{self.params[key]}" if key in self.params else "input"

    def forward(self, op, inputs, out: Tensor, seconds: float) -> None:
        idx = len(self.trace.ops)
        ins = [{"source": self.source(t), "shape": t.shape, "dtype": str(t.dtype)} for t in inputs]
        self.trace.ops.append(OpRecord(idx, op.name, self.stack[-1], ins, out.shape,
                                       str(out.dtype), value_stats(out.data), seconds))
        for i, t in enumerate(inputs):
            self.pending.setdefault((op.name, i, _node_id(t)), []).append(idx)
        self.producer[_node_id(out)] = idx
        if op.name == "causal_self_attention" and out._ctx is not None:
            self.attention[idx] = out._ctx.saved  # (q, k, v, probs); released after backward
        self.keep.append(out)
        self.alive.extend(inputs)

    def backward(self, op, i: int, parent: Tensor, grad: np.ndarray) -> None:
        candidates = self.pending.get((op.name, i, id(parent)))
        consumer = candidates.pop() if candidates else None  # latest first: reverse topo order
        norm = float(np.sqrt(np.sum(np.square(grad, dtype=np.float64))))
        self.trace.backward.append(BackwardEdge(len(self.trace.backward), consumer, op.name, i,
                                                self.source(parent), grad.shape, norm))
        prev = self.grad_sum.get(id(parent))
        self.grad_sum[id(parent)] = grad.copy() if prev is None else prev + grad


def _node_id(t) -> int:
    """Identity of a tensor's graph node (its Context; a leaf is its own node), as the
    engine's backward hooks see it."""
    ctx = getattr(t, "_ctx", None)
    return id(ctx) if ctx is not None else id(t)


@contextmanager
def _module_paths(model, stack: list[str]) -> Iterator[None]:
    """Temporarily wrap each submodule's forward so ops know which module ran them."""
    wrapped = []
    for name, mod in model.named_modules():
        if "forward" in vars(mod):
            continue  # already has an instance-level forward: leave it alone

        def fwd(*args, _orig=mod.forward, _name=name or "model", **kwargs):
            stack.append(_name)
            try:
                return _orig(*args, **kwargs)
            finally:
                stack.pop()

        mod.forward = fwd
        wrapped.append(mod)
    try:
        yield
    finally:
        for mod in wrapped:
            del mod.forward


@contextmanager
def hooked(recorder: _Recorder) -> Iterator[None]:
    """Install the recorder's hooks for the block; always removes exactly those two."""
    runtime.forward_hooks.append(recorder.forward)
    runtime.backward_hooks.append(recorder.backward)
    try:
        yield
    finally:
        runtime.forward_hooks.remove(recorder.forward)
        runtime.backward_hooks.remove(recorder.backward)


def trace(model, ids, targets=None, tokens: list[str] | None = None) -> Trace:
    """Run one forward and backward of `model` on a batch and record everything.

    Args:
        model: a minitorch GPT (forward(ids, targets) -> (logits, loss)), or any Module alike.
        ids: (B, T) int token ids. Without targets, the model sees ids[:, :-1] and learns
            ids[:, 1:] (next-token targets), so T >= 2.
        targets: (B, T) int targets for the loss.
        tokens: optional labels of the input positions, kept for heatmaps.
    Returns:
        a Trace. The model's parameter .grad values are restored to what they were before, so
        tracing leaves the model exactly as it found it; the traced gradients are in Trace.grads.
    """
    ids = np.asarray(ids)
    if ids.ndim != 2:
        raise ValueError(f"trace expects token ids of shape (B, T), got {ids.shape}")
    if targets is None:
        if ids.shape[1] < 2:
            raise ValueError("trace without targets needs T >= 2 (targets are the next tokens)")
        ids, targets = ids[:, :-1], ids[:, 1:]
    named = list(model.named_parameters())
    saved_grads = [p.grad for _, p in named]
    for _, p in named:
        p.grad = None
    rec = _Recorder({id(p): n for n, p in named})
    try:
        with hooked(rec), _module_paths(model, rec.stack):
            start = time.perf_counter()
            logits, loss = model(ids, targets)
            mid = time.perf_counter()
            loss.backward()
            end = time.perf_counter()
        out = rec.trace
        out.logits, out.loss, out.tokens = logits.data, float(loss.item()), tokens
        out.forward_seconds, out.backward_seconds = mid - start, end - mid
        out.grads = {n: p.grad.data for n, p in named if p.grad is not None}
        out.params = [{"name": n, "shape": p.shape, "norm": _norm(p.data),
                       "grad_norm": _norm(p.grad.data) if p.grad is not None else None,
                       "grad_stats": value_stats(p.grad.data) if p.grad is not None else None}
                      for n, p in named]
        for r in out.ops:
            g = rec.grad_sum.get(_node_id(rec.keep[r.index]))
            r.grad_norm = None if g is None else _norm(g)
        out.attention = _attention_layers(out, rec)
    finally:
        for (_, p), g in zip(named, saved_grads, strict=True):
            p.grad = g
    return out


def _norm(a: np.ndarray) -> float:
    return float(np.sqrt(np.sum(np.square(a, dtype=np.float64))))


def _attention_layers(tr: Trace, rec: _Recorder) -> list[AttentionLayer]:
    """One layer per causal_self_attention op, in forward order; its probabilities and the
    per-head q, k, v it used were captured from the op's saved arrays at forward time."""
    layers = []
    for r in tr.ops:
        if r.index in rec.attention:
            q, k, v, probs = rec.attention[r.index]
            layers.append(AttentionLayer(len(layers), r.module, q.shape, k.shape, v.shape,
                                         probs.copy()))
    return layers


# ---- printing ---------------------------------------------------------------------------
def _fmt(v) -> str:
    return "-" if v is None else f"{v:.3g}"


def format_trace(tr: Trace, max_rows: int | None = None) -> str:
    """A readable report: ops, parameters (norms), attention layers."""
    head = (f"{'#':>4} {'module':<18} {'op':<13} {'inputs':<26} {'output':<15} {'dtype':<7} "
            f"{'mean':>9} {'std':>9} {'min':>9} {'max':>9} {'nan':>4} {'inf':>4} {'ms':>7} "
            f"{'|grad|':>9}")
    lines = [f"forward {tr.forward_seconds * 1e3:.2f} ms, backward "
             f"{tr.backward_seconds * 1e3:.2f} ms, loss {_fmt(tr.loss)}, {len(tr.ops)} ops, "
             f"{len(tr.backward)} backward edges", "", head, "-" * len(head)]
    rows = tr.ops if max_rows is None else tr.ops[:max_rows]
    for r in rows:
        ins = ",".join("x".join(map(str, i["shape"])) or "()" for i in r.inputs)
        s = r.stats
        lines.append(
            f"{r.index:>4} {r.module[-18:]:<18} {r.op:<13} {ins[:26]:<26} "
            f"{'x'.join(map(str, r.shape)) or '()':<15} {r.dtype:<7} {_fmt(s['mean']):>9} "
            f"{_fmt(s['std']):>9} {_fmt(s['min']):>9} {_fmt(s['max']):>9} {s['nan']:>4} "
            f"{s['inf']:>4} {r.seconds * 1e3:>7.3f} {_fmt(r.grad_norm):>9}")
    if max_rows is not None and len(tr.ops) > max_rows:
        lines.append(f"... {len(tr.ops) - max_rows} more ops")
    lines += ["", f"{'parameter':<28} {'shape':<12} {'|w|':>9} {'|grad|':>9}"]
    for p in tr.params:
        lines.append(f"{p['name']:<28} {'x'.join(map(str, p['shape'])):<12} "
                     f"{_fmt(p['norm']):>9} {_fmt(p['grad_norm']):>9}")
    lines += ["", f"{'layer':<6} {'module':<10} {'Q':<14} {'K':<14} {'V':<14} "
              f"{'head':>4} {'mean max p':>10} {'entropy':>8}"]
    for a in tr.attention:
        p = a.probs.astype(np.float64)  # (B, nh, T, T)
        peak = p.max(-1).mean(axis=(0, 2))  # (nh,) how peaked the average row is
        ent = -(p * np.log(np.where(p > 0, p, 1.0))).sum(-1).mean(axis=(0, 2))  # (nh,) nats
        for h in range(p.shape[1]):
            shapes = [("x".join(map(str, s)) if s else "-") for s in (a.q_shape, a.k_shape,
                                                                      a.v_shape)]
            lines.append(f"{a.layer:<6} {a.module:<10} {shapes[0]:<14} {shapes[1]:<14} "
                         f"{shapes[2]:<14} {h:>4} {peak[h]:>10.3f} {ent[h]:>8.3f}")
    return "\n".join(lines)
