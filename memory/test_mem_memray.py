"""memray asserts flat memory, native allocations included: pytest-memray's leak and high-water
limits on the real workload, and memray's heap after every step of a 300-step run.

tracemalloc sees Python's and NumPy's allocators only; memray hooks malloc, calloc and mmap in
every library, so it also counts a C extension's own buffers. The native negative control (a
libc allocation never freed, in every backward) shows the difference: tracemalloc's exact check
passes it, every memray check fails it. The graph-release control fails them too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from minitorch.models import PRESETS

from .budget import footprint
from .measure import CHILD_ENV, ROOT, flatness
from .test_mem_peak import FACTOR
from .test_mem_traced import WARMUP
from .workload import BATCH, NATIVE_LEAK_BYTES, SEQ_LEN

MB = 2**20
# limit_leaks: bytes allocated during the test and still alive at its end, per allocation
# location (pytest-memray's unit). A flat run leaves well under 0.1 MB at any location once the
# last step's gradients are dropped (CPython's free lists keep at most ~0.4 MB of tuples of one
# size); a leak of 3.4 KB or more per step at one location exceeds 1 MB in 300 steps.
LEAK_LIMIT_MB = 1.0
# limit_memory: the high-water mark of one step, started from the warmed-up state, against the
# same gate as test_mem_peak (FACTOR x the analytic footprint). Parameters and Adam's moments
# exist before the step, so memray does not count them: they come off the allowance.
_FP = footprint(PRESETS["seed"], BATCH, SEQ_LEN)
PEAK_LIMIT_MB = (FACTOR * _FP["bytes"] - _FP["parts"]["parameters"]
                 - _FP["parts"]["adam_exp_avg_and_exp_avg_sq"]) / MB
# Both markers count the test's own thread only: meanwhile the suite's threads collect the child
# runs' results (conftest.ChildRuns), which is harness, not workload. The workload allocates on
# the test's thread; BLAS worker threads take their buffers once, during warm-up.


@pytest.mark.limit_leaks(f"{LEAK_LIMIT_MB} MB", current_thread_only=True)
def test_mem_memray_no_leaks_over_300_steps(memray_workload):
    work, steps = memray_workload
    for _ in range(steps):
        work.step()
    work.opt.zero_grad()  # the last step's gradients: the next step's zero_grad would drop them


@pytest.mark.limit_memory(f"{PEAK_LIMIT_MB:.2f} MB", current_thread_only=True)
def test_mem_memray_step_peak_within_budget(memray_workload):
    work, _ = memray_workload
    work.step()


MARKER_TESTS = ["test_mem_memray_no_leaks_over_300_steps",
                "test_mem_memray_step_peak_within_budget"]
# What each planted control must do to the marker tests (pytest-memray's own failure messages).
EXPECTED = {"native": {"test_mem_memray_no_leaks_over_300_steps": "was allowed to leak",
                       "test_mem_memray_step_peak_within_budget": None},
            "cycle": {"test_mem_memray_no_leaks_over_300_steps": "was allowed to leak",
                      "test_mem_memray_step_peak_within_budget": "was limited to"}}


def run_marker_tests(plant: str, tmp_path) -> dict[str, str | None]:
    """Run the marker tests in a fresh pytest with `plant`: {test: failure message or None}."""
    junit = tmp_path / f"{plant}.xml"
    ids = [f"memory/test_mem_memray.py::{name}" for name in MARKER_TESTS]
    env = {**os.environ, **CHILD_ENV, "MINITORCH_ARTIFACTS": str(tmp_path / "artifacts")}
    env.pop("MEMRAY_RESULT_PATH", None)  # set by this session's pytest-memray: not a worker of it
    proc = subprocess.run([sys.executable, "-m", "pytest", *ids, f"--memory-plant={plant}",
                           "-p", "no:cacheprovider", "-q", f"--junitxml={junit}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    if not junit.exists():
        raise RuntimeError(f"pytest with --memory-plant={plant} wrote no report:\n"
                           f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    out = {}
    for case in ET.parse(junit).iter("testcase"):
        failure = case.find("failure")
        if case.find("error") is not None or case.find("skipped") is not None:
            raise RuntimeError(f"{case.get('name')} did not run to a verdict:\n{proc.stdout}")
        out[case.get("name")] = None if failure is None else failure.get("message", "")
    return out


def test_mem_memray_markers_catch_both_controls(tmp_path, results):
    """The same marker tests fail with each control planted (--memory-plant); the native leak
    passes the step peak (64 KB a step is no peak problem), the graph leak fails both."""
    got = {plant: run_marker_tests(plant, tmp_path) for plant in EXPECTED}
    results.setdefault("memray", {})["markers"] = {
        "leak_limit_mb_per_location": LEAK_LIMIT_MB, "step_peak_limit_mb": PEAK_LIMIT_MB,
        "factor": FACTOR, "controls": got,
        "expected": {plant: {test: "pass" if message is None else "fail"
                             for test, message in expected.items()}
                     for plant, expected in EXPECTED.items()}}
    for plant, expected in EXPECTED.items():
        assert set(got[plant]) == set(expected), (plant, got[plant])
        for test, message in expected.items():
            if message is None:
                assert got[plant][test] is None, f"{plant}: {test} failed: {got[plant][test]}"
            else:
                assert got[plant][test] and message in got[plant][test], (
                    f"with --memory-plant={plant}, {test} should fail with {message!r}: "
                    f"{got[plant][test]}")


def _record(results: dict, name: str, result: dict, **fit) -> dict:
    """The run's verdict (results["memray"]["flatness"]) and its series (results["series"])."""
    heap_mb = (np.asarray(result["memray_heap_bytes"]) / MB).tolist()
    out = {**flatness(heap_mb, **fit), "steps_run": len(heap_mb), "batch": result["batch"],
           "gc": result["gc"], "leak_control": result["leak"] or result["native_leak"],
           "memray_peak_mb": result["memray_peak_bytes"] / MB, "seconds": result["seconds"]}
    results.setdefault("memray", {}).setdefault("flatness", {})[name] = out
    results.setdefault("series", {}).setdefault(name, {}).update(
        steps=result["steps_index"], memray_heap_mb=heap_mb)
    return out


@pytest.mark.memory_runs("memray_gc_enabled")
def test_mem_memray_heap_flat_over_300_steps(run, results):
    out = _record(results, "memray_gc_enabled", run("memray_gc_enabled"))
    assert out["steps_run"] == 300
    assert out["flat"], (f"memray's heap grows: slope {out['slope_mb_per_step']:.4f} MB/step "
                         f"(limit {out['slope_max_mb_per_step']}), medians "
                         f"{out['head_median_mb']:.2f} -> {out['tail_median_mb']:.2f} MB")


@pytest.mark.memory_runs("memray_native_leak_control", "memray_leak_control")
def test_mem_memray_heap_controls_are_caught(run, results):
    """Same verdict as the 300-step run (fitted after 10 steps, windows of 10): both grow."""
    for name in ("memray_native_leak_control", "memray_leak_control"):
        out = _record(results, name, run(name), fit_from=10, window=10)
        assert not out["flat"], name
        assert out["slope_mb_per_step"] > out["slope_max_mb_per_step"], name


@pytest.mark.memory_runs("traced_native_leak_control", "memray_native_leak_control")
def test_mem_memray_native_leak_is_invisible_to_tracemalloc(run, results):
    """With the native leak planted, tracemalloc's heap moves by no more than it does on a
    normal run (0 B a step at 5d27e7c, a few hundred since the engine's saved-array locks,
    which test_mem_traced reports), never by the 64 KiB leaked each step; memray's heap grows
    by at least the leaked block every step."""
    traced = np.asarray(run("traced_native_leak_control")["traced_heap_bytes"])
    memray_heap = np.asarray(run("memray_native_leak_control")["memray_heap_bytes"])
    traced_changes = np.diff(traced[WARMUP - 1:])
    memray_changes = np.diff(memray_heap[WARMUP - 1:])
    results.setdefault("memray", {})["native_leak_control"] = {
        "leak_bytes_per_step": NATIVE_LEAK_BYTES,
        "traced_step_changes_bytes": traced_changes.tolist(),
        "memray_median_step_change_bytes": float(np.median(memray_changes))}
    results.setdefault("series", {}).setdefault("native_leak_control_exact", {}).update(
        steps=run("traced_native_leak_control")["steps_index"], traced_heap_bytes=traced.tolist())
    assert len(traced_changes) >= 10
    assert np.abs(traced_changes).max() < NATIVE_LEAK_BYTES // 16, (
        f"tracemalloc saw the native leak after all: {traced_changes.tolist()}")
    assert np.median(memray_changes) >= NATIVE_LEAK_BYTES, memray_changes.tolist()
