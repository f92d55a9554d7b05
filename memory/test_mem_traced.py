"""The traced heap (tracemalloc, which sees every NumPy buffer and Python object) is flat to the
byte from step to step once warm-up is over, and so is each step's high-water mark.

Exact, so it catches leaks far below RSS noise: the control that keeps each step's loss tensor
in a list (a few hundred bytes a step) must fail it, as must the graph-release control.
"""

from __future__ import annotations

import numpy as np
import pytest

WARMUP = 5  # steps: the first creates Adam's state and the grads, then caches settle


def _record(results: dict, name: str, result: dict) -> dict:
    """Step-to-step changes after warm-up (results["exact"]); series (results["series"])."""
    heap = np.asarray(result["traced_heap_bytes"], dtype=np.int64)
    peak = np.asarray(result["traced_peak_bytes"], dtype=np.int64)
    out = {"warmup_steps": WARMUP, "steps_run": len(heap), "batch": result["batch"],
           "gc": result["gc"], "seconds": result["seconds"],
           "step_to_step_change_bytes": np.diff(heap[WARMUP - 1:]).tolist(),
           "step_peak_change_bytes": np.diff(peak[WARMUP - 1:]).tolist()}
    results.setdefault("exact", {})[name] = out
    results.setdefault("series", {}).setdefault(name, {}).update(
        steps=result["steps_index"], traced_heap_bytes=heap.tolist(),
        traced_peak_bytes=peak.tolist())
    return out


@pytest.mark.memory_runs("traced")
def test_mem_traced_heap_flat_to_the_byte(run, results):
    out = _record(results, "exact_gc_enabled", run("traced"))
    heap, peak = out["step_to_step_change_bytes"], out["step_peak_change_bytes"]
    assert len(heap) >= 20
    assert heap == [0] * len(heap), f"traced heap changes per step after warm-up: {heap}"
    assert peak == [0] * len(peak), f"per-step high-water mark changes: {peak}"


@pytest.mark.memory_runs("traced_retained_loss_control")
def test_mem_traced_retained_loss_control_is_caught(run, results):
    """Keeping every loss tensor (a classic user leak; the graph itself is still released)
    grows the heap by a few hundred bytes each step: invisible to RSS, caught here."""
    out = _record(results, "retained_loss_control", run("traced_retained_loss_control"))
    heap = out["step_to_step_change_bytes"]
    assert heap and all(d > 0 for d in heap), f"the retained losses went unseen: {heap}"
    assert max(heap) < 2**16, "far more than one loss tensor per step: the control is wrong"


@pytest.mark.memory_runs("traced_leak_control")
def test_mem_traced_leak_control_is_caught(run, results):
    out = _record(results, "leak_control_exact", run("traced_leak_control"))
    heap = out["step_to_step_change_bytes"]
    assert heap and min(heap) > 2**20, f"a whole step graph (MBs) should leak each step: {heap}"
