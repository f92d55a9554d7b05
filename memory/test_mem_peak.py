"""Peak memory of a training step against the analytic footprint (memory/budget.py), the peak
RSS of the 300-step runs against the 200 MB target, and where the step's memory goes.

The traced peak is tracemalloc's high-water mark within one step, in a child process that
started tracing before building the model: it holds parameters, gradients, Adam state, the
graph and every temporary, and nothing from other tests.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import tracemalloc
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from minitorch.engine import runtime
from minitorch.models import GPT, PRESETS

from .budget import footprint, n_params
from .test_mem_traced import WARMUP
from .workload import Workload, context_arrays

MB = 2**20
# Allowed peak / analytic footprint (the design gate). The graph keeps only its nodes and
# what the vjps saved (never the forward outputs themselves), backward drops each node once it
# is processed, relu shares its saved output with the next linear, each norm is folded into the
# next linear (its output never kept), and a gradient nothing else holds is summed into and
# written over in place (graph.exclusive): the measured eager step peak is ~1.053x the
# footprint, the rest being temporaries and what the caller keeps (the logits). One more retained
# (B, T, 4C) float64 array per block (12 MB, 0.25x), or any graph that outlives its step,
# exceeds it. The measure is exact (tracemalloc), not noisy.
FACTOR = 1.15
# Replay keeps no graph objects and takes the step's large arrays from its memory plan (one
# mapping, the step's exact peak of live arrays; engine/pool.py): its step peak is ~1.008x,
# under the 1.05x the performance issue set. Copying gradients instead of writing them in place
# (the control) takes it to ~1.10x.
REPLAY_FACTOR = 1.05
RSS_TARGET_MB = 200.0  # peak RSS of a 300-step seed run in float64 (MB = 2**20 bytes)


def _peak(result: dict, factor: float) -> dict:
    B, T = result["batch_shape"]
    budget = footprint(PRESETS["seed"], B, T)
    peak = max(result["traced_peak_bytes"][WARMUP:])
    return {"traced_peak_mb": peak / MB, "budget_mb": budget["bytes"] / MB,
            "ratio": peak / budget["bytes"], "factor": factor, "batch": B,
            "budget_parts_mb": {k: v / MB for k, v in budget["parts"].items()}}


def test_mem_peak_budget_counts_parameters():
    """The footprint's parameter count matches every preset's model."""
    for name, cfg in PRESETS.items():
        model_count = sum(p.data.size for p in GPT(cfg).parameters())
        assert n_params(cfg) == model_count, name


@pytest.mark.parametrize("name,key,factor", [
    pytest.param("traced", "step", FACTOR, marks=pytest.mark.memory_runs("traced"), id="eager"),
    pytest.param("traced_replay", "step_replay", REPLAY_FACTOR,
                 marks=pytest.mark.memory_runs("traced_replay"), id="replay")])
def test_mem_peak_step_within_budget(run, results, name, key, factor):
    """The step's high-water mark against the analytic footprint, eager and in replay mode."""
    out = _peak(run(name), factor)
    results.setdefault("peak", {})[key] = out
    assert out["ratio"] <= factor, (f"{name}: step peak {out['traced_peak_mb']:.1f} MB is "
                                    f"{out['ratio']:.3f}x the footprint {out['budget_mb']:.1f}"
                                    f" MB (allowed {factor}x)")
    assert out["ratio"] >= 1.0, (f"{name}: step peak {out['traced_peak_mb']:.1f} MB is below "
                                 f"the footprint {out['budget_mb']:.1f} MB, which must be a "
                                 "minimum: budget.py counts something the step does not need")


@pytest.mark.memory_runs("traced_replay", "traced_replay_copies_control")
def test_mem_peak_replay_gate_catches_copied_gradients(run, results):
    """Negative control of the replay gate: the same replayed step with every gradient a new
    array (no in-place sums or vjp writes) exceeds REPLAY_FACTOR."""
    normal = _peak(run("traced_replay"), REPLAY_FACTOR)
    copies = _peak(run("traced_replay_copies_control"), REPLAY_FACTOR)
    results.setdefault("peak", {})["replay_gradients_copied_control"] = copies
    assert normal["ratio"] <= REPLAY_FACTOR < copies["ratio"], (normal["ratio"], copies["ratio"])


@pytest.mark.memory_runs("traced_small_batch", "traced_leak_control")
def test_mem_peak_leak_control_is_caught(run, results):
    """Same batch (B=2), same check: the normal run passes, the leaking one (60 steps of graph
    release off, gc off) exceeds the factor."""
    normal = _peak(run("traced_small_batch"), FACTOR)
    leak = _peak(run("traced_leak_control"), FACTOR)
    results.setdefault("peak", {})["small_batch"] = normal
    results["peak"]["leak_control_gc_disabled"] = leak
    assert normal["ratio"] <= FACTOR
    assert leak["ratio"] > FACTOR


@pytest.mark.memory_runs("rss_gc_enabled", "rss_gc_disabled", "rss_replay")
def test_mem_peak_rss_within_target(run, results):
    peaks = {name: run(f"rss_{name}")["peak_rss_mb"]
             for name in ("gc_enabled", "gc_disabled", "replay")}
    results.setdefault("peak", {})["rss_300_steps"] = {
        **{f"peak_rss_mb_{k}": v for k, v in peaks.items()}, "budget_mb": RSS_TARGET_MB,
        "factor": 1.0}
    assert max(peaks.values()) <= RSS_TARGET_MB, f"peak RSS {peaks} over {RSS_TARGET_MB} MB"


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _mb_by_op(arrays: dict[int, tuple[str, int]]) -> dict[str, float]:
    totals: Counter = Counter()
    for name, nbytes in arrays.values():
        totals[name] += nbytes
    return {name: n / MB for name, n in totals.most_common()}


def traced_forward(work: Workload) -> tuple[list, int]:
    """One hooked forward: its (op name, output) nodes and the traced bytes it added."""
    idx, targets = work.next_batch()
    work.opt.zero_grad()
    nodes: list = []

    def hook(op, inputs, out, seconds):
        nodes.append((op.name, out))

    gc.collect()
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    runtime.forward_hooks.append(hook)
    try:
        work.model(idx, targets)
    finally:
        runtime.forward_hooks.remove(hook)
        added = tracemalloc.get_traced_memory()[0] - before
        if not was_tracing:
            tracemalloc.stop()
    return nodes, added


def census(nodes: list, params: set[int]) -> tuple[dict, dict]:
    """Unique buffers in the graph (views count once): (saved by a vjp, held only as an output)."""
    saved: dict[int, tuple[str, int]] = {}
    for name, t in nodes:
        for a in context_arrays(t._ctx) if t._ctx is not None else ():
            if id(_root(a)) not in params:
                saved.setdefault(id(_root(a)), (name, _root(a).nbytes))
    held: dict[int, tuple[str, int]] = {}
    for name, t in nodes:
        r = _root(t.data)
        if id(r) not in saved and id(r) not in params:
            held.setdefault(id(r), (name, r.nbytes))
    return saved, held


def test_mem_peak_census_of_forward(results):
    """Where the memory goes: the arrays one forward leaves in the graph, split into those a
    vjp saved and those held only because the graph keeps every node's output. Together they
    must account for the traced heap the forward added, so the split can be trusted."""
    work = Workload()
    work.step()
    nodes, added = traced_forward(work)
    saved, held = census(nodes, {id(p.data) for p in work.model.parameters()})
    n_saved, n_held = (sum(b for _, b in d.values()) for d in (saved, held))
    analytic = footprint(PRESETS["seed"], work.batch, work.seq_len)["parts"]["activations"]
    results["census"] = {
        "forward_added_mb": added / MB, "graph_arrays_mb": (n_saved + n_held) / MB,
        "saved_by_vjps_mb": n_saved / MB, "held_only_by_graph_mb": n_held / MB,
        "analytic_activations_mb": analytic / MB, "nodes": len(nodes),
        "saved_by_op_mb": _mb_by_op(saved), "held_by_op_mb": _mb_by_op(held)}
    nodes[-1][1].backward()  # the loss: frees the graph
    assert 0.98 * added <= n_saved + n_held <= added, (
        f"the graph's arrays ({(n_saved + n_held) / MB:.2f} MB) do not account for the "
        f"forward's {added / MB:.2f} MB")
    assert n_saved >= analytic, ("the vjps saved less than the analytic minimum: "
                                 "budget.activation_elements counts something backward can't need")


@pytest.mark.slow
def test_mem_peak_rss_is_the_childs_own():
    """A child's peak RSS must not inherit its parent's: Linux carries ru_maxrss across exec, so a
    400 MB parent made every measuring child report >= 400 MB (seen in CI before the fix)."""
    ballast = np.ones(50_000_000)  # ~381 MB resident in this (parent) process
    code = "from memory.measure import peak_rss_mb; print(peak_rss_mb())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent)
    assert ballast.sum() == 50_000_000
    assert float(out.stdout) < 200.0, out.stdout
