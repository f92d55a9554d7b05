"""The graph of a training step is freed by reference counting alone (deterministic).

With the cyclic GC disabled: after backward only the tensors the caller still holds (logits,
loss) survive; once the caller drops them, every node of the step is dead and gc.collect()
finds nothing. The negative control (graph release off, output attached to its own Context, as
in the seed's closures) must fail each of these checks.
"""

from __future__ import annotations

import gc
import weakref

from minitorch.engine import runtime

from .workload import Workload, context_arrays


class StepGraph:
    """Weak references to everything one step's forward recorded: output tensors, their
    Contexts and the arrays the vjps saved (parameters' own arrays excluded: they live on)."""

    def __init__(self, work: Workload):
        self._keep = {id(p.data) for p in work.model.parameters()}
        self.refs: list[tuple[str, weakref.ref]] = []

    def hook(self, op, inputs, out, seconds) -> None:
        self.refs.append((f"{op.name} output", weakref.ref(out)))
        ctx = getattr(out, "_ctx", None)
        if ctx is None:
            return
        self.refs.append((f"{op.name} context", weakref.ref(ctx)))
        for a in context_arrays(ctx):
            if id(a) not in self._keep:
                self.refs.append((f"{op.name} saved array", weakref.ref(a)))

    def alive(self, exclude: tuple = ()) -> list[str]:
        skip = {id(x) for x in exclude}
        return [name for name, r in self.refs if r() is not None and id(r()) not in skip]


def traced_step(work: Workload) -> tuple[StepGraph, object, object]:
    """One step with the forward hooked: the step's graph refs, and its logits and loss."""
    graph = StepGraph(work)
    runtime.forward_hooks.append(graph.hook)
    try:
        logits, loss = work.step()
    finally:
        runtime.forward_hooks.remove(graph.hook)
    return graph, logits, loss


def check_step(work: Workload) -> dict:
    """Warm-up step, collect, then the measured step: what survives, and what gc finds."""
    work.step()
    gc.collect()
    graph, logits, loss = traced_step(work)
    watched = {kind: sum(name.endswith(kind) for name, _ in graph.refs)
               for kind in ("output", "context", "saved array")}
    # The caller still holds logits and loss, and with them their (released) Contexts.
    after_backward = graph.alive(exclude=(logits, loss, logits._ctx, loss._ctx))
    del logits, loss
    after_del = graph.alive()
    found = gc.collect()
    after_collect = graph.alive()
    return {"graph_refs": len(graph.refs), "watched": watched,
            "alive_after_backward": len(after_backward), "alive_after_del": len(after_del),
            "gc_collect_found": found, "alive_after_collect": len(after_collect),
            "kinds_alive_after_backward": sorted(set(after_backward)),
            "kinds_alive_after_del": sorted(set(after_del))}


def test_mem_cycles_graph_freed_by_refcount(gc_disabled, results):
    out = check_step(Workload())
    results.setdefault("cycles", {})["released"] = out
    assert all(n > 0 for n in out["watched"].values()), (
        f"the forward hook must see outputs, contexts and saved arrays: {out['watched']}")
    assert out["alive_after_backward"] == 0, (
        f"{out['alive_after_backward']} graph objects survive backward although the caller "
        f"holds only logits and loss: {out['kinds_alive_after_backward']}")
    assert out["alive_after_del"] == 0, f"graph survives `del loss`: {out['kinds_alive_after_del']}"
    assert out["gc_collect_found"] == 0, (
        f"gc.collect() found {out['gc_collect_found']} unreachable objects: a step makes cycles")


def test_mem_cycles_negative_control_is_caught(gc_disabled, leaky_engine, results):
    out = check_step(Workload())
    results.setdefault("cycles", {})["leak_control"] = out
    # Every check above must report the leak ...
    assert out["alive_after_backward"] > 0
    assert out["alive_after_del"] > 0
    assert out["gc_collect_found"] > 0
    # ... and it must be the cycle, not a stray reference: the collector frees all of it.
    assert out["alive_after_collect"] == 0
