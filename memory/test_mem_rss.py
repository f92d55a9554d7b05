"""RSS stays flat over 300 training steps of the seed GPT (float64), with the cyclic GC on and
with it off for the whole run; the leaking negative control must be reported as growing.

Each run is its own child process with one BLAS thread (memory/measure.py); RSS is read after
every step. Judged by the least-squares slope after warm-up and by window medians
(measure.flatness), never by max - min, which the allocator's sawtooth dominates.
"""

from __future__ import annotations

import numpy as np
import pytest

from .measure import SLOPE_MAX_MB, flatness


def _record(results: dict, name: str, result: dict, **fit) -> dict:
    """The run's verdict (results["flatness"]) and its per-step series (results["series"])."""
    out = {**flatness(result["rss_mb"], **fit), "peak_rss_mb": result["peak_rss_mb"],
           "steps_run": len(result["rss_mb"]), "batch": result["batch"], "gc": result["gc"],
           "leak_control": result["leak"], "seconds": result["seconds"]}
    results.setdefault("flatness", {})[name] = out
    results.setdefault("series", {}).setdefault(name, {}).update(
        steps=result["steps_index"], rss_mb=result["rss_mb"])
    return out


@pytest.mark.parametrize("name", [
    pytest.param("gc_enabled", marks=pytest.mark.memory_runs("rss_gc_enabled")),
    # replay mode (minitorch.replay): no graph, the captured step run again
    pytest.param("replay", marks=pytest.mark.memory_runs("rss_replay"))])
def test_mem_rss_flat(run, results, name):
    out = _record(results, name, run(f"rss_{name}"))
    assert out["steps_run"] == 300
    assert out["flat"], (f"{name}: RSS grows: slope {out['slope_mb_per_step']:.4f} MB/step "
                         f"(limit {out['slope_max_mb_per_step']}), medians "
                         f"{out['head_median_mb']:.1f} -> {out['tail_median_mb']:.1f} MB (band "
                         f"{out['median_band_mb']})")


@pytest.mark.memory_runs("rss_gc_disabled")
def test_mem_rss_flat_gc_disabled(run, results):
    """Without the cyclic GC only reference counting frees memory: still flat."""
    out = _record(results, "gc_disabled", run("rss_gc_disabled"))
    assert out["steps_run"] == 300
    assert out["flat"], (f"RSS grows with gc off: slope {out['slope_mb_per_step']:.4f} MB/step, "
                         f"medians {out['head_median_mb']:.1f} -> {out['tail_median_mb']:.1f} MB")


@pytest.mark.memory_runs("rss_leak_control")
def test_mem_rss_leak_control_is_caught(run, results):
    """Graph release off + gc off, B=2, 60 steps: the same verdict must say 'growing'."""
    out = _record(results, "leak_control", run("rss_leak_control"), fit_from=10, window=10)
    assert not out["flat"]
    assert out["slope_mb_per_step"] > out["slope_max_mb_per_step"]
    assert out["median_change_mb"] > out["median_band_mb"]


def test_mem_rss_flatness_verdict_on_synthetic_series():
    """The verdict ignores the allocator's one-step dips but not growth just over the limit."""
    steps = np.arange(300)
    sawtooth = 166.0 + np.where(steps % 3 == 0, -1.0, 0.0)
    dips = np.zeros(300)
    dips[[55, 61, 70, 78, 90]] = -53.0  # glibc trimming the heap top for one step, early on
    flat = flatness((sawtooth + dips).tolist())
    assert flat["flat"] and flat["raw_slope_mb_per_step"] > SLOPE_MAX_MB  # the filter matters
    leak = flatness((sawtooth + dips + 1.2 * SLOPE_MAX_MB * steps).tolist())
    assert not leak["flat"]
