"""Per-step memory series of the training workload, measured in a fresh child process.

    python -m memory.measure '{"kind": "rss", "steps": 300, "gc": false}'

prints one JSON object (the series and the process's peak RSS) as its last line of output.
Kinds: "rss" (psutil's RSS, and glibc's count of malloc'd bytes in use), "traced"
(tracemalloc), "memray" (every allocation memray hooks, native included).
A child process keeps earlier tests' heaps out of the RSS, and lets a run disable the cyclic
GC from its first allocation. Test code only; nothing here changes minitorch outside a run.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import tracemalloc
from contextlib import ExitStack
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MB = 2**20
# One BLAS thread: the machine is shared, and thread pools would add their own buffers to RSS.
CHILD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# native_leak: False, or how each backward() leaks 64 KiB of C heap ("strdup", "ctypes_malloc");
# copy_grads: the engine never writes a gradient in place (workload.gradients_copied)
DEFAULTS = {"kind": "rss", "steps": 300, "gc": True, "leak": False, "native_leak": False,
            "retain_loss": False, "batch": 32, "collect": False, "replay": False,
            "copy_grads": False}
KINDS = ("rss", "traced", "memray")


# RSS flatness: a least-squares slope over the steps after warm-up, and the medians of the
# first and last `window` of those steps (robust to the allocator's sawtooth, unlike max - min).
SLOPE_MAX_MB = 0.01  # MB/step: 2.5 MB over 250 steps; a step's graph is ~70 MB
FIT_FROM = 50  # warm-up steps excluded (Adam state, allocator and BLAS first-use growth)
WINDOW = 50
# Both are taken on the 9-step running maximum of RSS, the level the process has committed.
# RSS read after a step is bimodal: on some steps glibc hands the free top of the heap back
# (RSS -53 MB, back up on the next step), singly or every other step for a stretch. A few such
# dips near one end moved a plain least-squares slope to 0.017 MB/step on a flat run; the
# running maximum ignores them, and passes growth through unchanged.
ENVELOPE = 9


def flatness(rss_mb: list[float], fit_from: int = FIT_FROM, window: int = WINDOW) -> dict:
    """Slope (MB/step) after `fit_from` steps, start/end window medians, and the verdict.

    The median band is the slope limit times the distance between the windows' centres, so
    both criteria allow the same growth rate.
    """
    y = np.asarray(rss_mb[fit_from:], dtype=float)
    if len(y) - ENVELOPE + 1 < 2 * window:
        raise ValueError(f"flatness: {len(rss_mb)} steps leave {len(y)} after warm-up "
                         f"{fit_from}; need two windows of {window} plus {ENVELOPE - 1}")
    steps = np.arange(fit_from + 1, fit_from + len(y) + 1)
    level = np.lib.stride_tricks.sliding_window_view(y, ENVELOPE).max(axis=1)
    at = steps[ENVELOPE // 2:len(y) - ENVELOPE // 2]
    slope = float(np.polyfit(at, level, 1)[0])
    head, tail = float(np.median(level[:window])), float(np.median(level[-window:]))
    band = SLOPE_MAX_MB * (len(level) - window)
    return {"slope_mb_per_step": slope, "slope_max_mb_per_step": SLOPE_MAX_MB,
            "head_median_mb": head, "tail_median_mb": tail, "median_change_mb": tail - head,
            "median_band_mb": band,
            "flat": bool(slope < SLOPE_MAX_MB and abs(tail - head) < band),
            "fit_steps": [int(steps[0]), int(steps[-1])], "window": window,
            "envelope_steps": ENVELOPE,
            "raw_slope_mb_per_step": float(np.polyfit(steps, y, 1)[0]),
            "one_step_dips_over_5mb": int(np.sum((y[1:-1] < y[:-2] - 5) & (y[1:-1] < y[2:] - 5)))}


def peak_rss_mb() -> float:
    """High-water RSS of this process image so far: VmHWM from /proc/self/status (KiB).

    Not ru_maxrss: Linux carries ru_maxrss across exec, so a child started by a large parent
    (a pytest process that loaded torch) would report the parent's peak as its own.
    """
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


@functools.cache
def _mallinfo2():
    fn = ctypes.CDLL(None).mallinfo2  # glibc >= 2.33
    fn.restype = _MallInfo2
    return fn


def malloc_in_use() -> int:
    """Bytes glibc's malloc has handed out and not had back (mallinfo2: uordblks + hblkhd),
    whoever called it, ctypes included. Pages never touched count too, unlike RSS."""
    info = _mallinfo2()()
    return info.uordblks + info.hblkhd


def rss_series(work, steps: int, retained: list) -> dict:
    """RSS (MB) after every step, read with psutil, and glibc's malloc'd bytes in use (MB)."""
    import psutil

    proc = psutil.Process()
    rss, in_use = np.empty(steps), np.empty(steps)
    for i in range(steps):
        _, loss = work.step()
        if retained is not None:
            retained.append(loss)
        del loss
        rss[i] = proc.memory_info().rss / MB
        in_use[i] = malloc_in_use() / MB
    return {"rss_mb": rss.tolist(), "malloc_in_use_mb": in_use.tolist()}


def traced_series(work, steps: int, retained: list, collect: bool) -> dict:
    """tracemalloc's traced heap after every step (bytes) and its high-water mark within it.

    `collect` runs gc.collect() before each reading: a full collection also empties CPython's
    free lists, which otherwise drift by a few blocks per step (tuple(generator) shrinks a
    tuple from one size class into another) and would hide byte-exactness. The cycle test
    proves the collection finds nothing else to free.
    """
    current = np.empty(steps, dtype=np.int64)
    peak = np.empty(steps, dtype=np.int64)
    for i in range(steps):
        tracemalloc.reset_peak()
        _, loss = work.step()
        if retained is not None:
            retained.append(loss)
        del loss
        if collect:
            gc.collect()
        current[i], peak[i] = tracemalloc.get_traced_memory()
    return {"traced_heap_bytes": current.tolist(), "traced_peak_bytes": peak.tolist()}


# memray: a marker allocation of this size, made and freed after every step, splits memray's
# record of the whole run into steps. Nothing else in a step allocates exactly this much.
MARKER_BYTES = 999_983


def memray_series(work, steps: int, retained: list, path: Path) -> dict:
    """memray's heap after every step: the bytes allocated since the capture began and not yet
    freed, native allocations included (malloc, calloc, mmap from any library), computed from
    one capture of the whole run."""
    import memray
    from memray import AllocatorType as A

    with memray.Tracker(path):
        for _ in range(steps):
            _, loss = work.step()
            if retained is not None:
                retained.append(loss)
            del loss
            marker = bytearray(MARKER_BYTES - 1)  # bytearray adds one byte for its NUL
            del marker
    reader = memray.FileReader(path)
    live: dict[int, int] = {}
    heap, series = 0, []
    for rec in reader.get_allocation_records():
        if rec.allocator in (A.FREE, A.PYMALLOC_FREE):
            heap -= live.pop(rec.address, 0)  # 0: allocated before the capture began
        elif rec.allocator == A.MUNMAP:
            heap -= rec.size
        elif rec.size == MARKER_BYTES and rec.allocator == A.MALLOC:
            series.append(heap)  # the marker itself is not counted
        else:
            live[rec.address] = rec.size
            heap += rec.size
    if len(series) != steps:
        raise RuntimeError(f"memray_series: found {len(series)} step markers in {steps} steps")
    return {"memray_heap_bytes": series, "memray_peak_bytes": reader.metadata.peak_memory}


def run(spec: dict) -> dict:
    """Build the workload (after tracing starts, so parameters are traced) and measure it."""
    from . import workload

    spec = {**DEFAULTS, **spec}
    unknown = set(spec) - set(DEFAULTS)
    if unknown or spec["kind"] not in KINDS:
        raise ValueError(f"memory.measure: unknown option(s) {sorted(unknown)} or kind "
                         f"{spec['kind']!r} (want one of {KINDS})")
    if not spec["gc"]:
        gc.disable()
    if spec["kind"] == "traced":
        tracemalloc.start()
    start = time.perf_counter()
    with ExitStack() as stack:
        if spec["leak"]:
            stack.enter_context(workload.graph_release_disabled())
        if spec["native_leak"]:
            stack.enter_context(workload.native_leak_planted(spec["native_leak"]))
        if spec["copy_grads"]:
            stack.enter_context(workload.gradients_copied())
        work = workload.Workload(batch=spec["batch"], replay=spec["replay"])
        retained = [] if spec["retain_loss"] else None
        if spec["kind"] == "rss":
            out = rss_series(work, spec["steps"], retained)
        elif spec["kind"] == "traced":
            out = traced_series(work, spec["steps"], retained, spec["collect"])
        else:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="memray-")))
            out = memray_series(work, spec["steps"], retained, tmp / "run.bin")
    return {**spec, **out, "steps_index": list(range(1, spec["steps"] + 1)),
            "peak_rss_mb": peak_rss_mb(), "seconds": time.perf_counter() - start,
            "n_params": work.n_params, "batch_shape": [work.batch, work.seq_len],
            "python": platform.python_version(), "numpy": np.__version__}


def in_child(spec: dict, timeout: float = 1200, started=None) -> dict:
    """Run `spec` in a fresh interpreter and return its JSON result; raise with its stderr.

    The child's Popen is passed to `started.append` (if given), so a caller can stop it early.
    """
    env = {**os.environ, **CHILD_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.Popen([sys.executable, "-m", "memory.measure", json.dumps(spec)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if started is not None:
        started.append(proc)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise RuntimeError(f"memory.measure {spec} took over {timeout} s") from None
    if proc.returncode < 0:
        raise RuntimeError(f"memory.measure {spec} was stopped by signal {-proc.returncode}")
    if proc.returncode != 0:
        raise RuntimeError(f"memory.measure {spec} exited {proc.returncode}:\n{stderr[-4000:]}")
    return json.loads(stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        spec = json.loads(argv[0])
    except ValueError as e:
        print(f"memory.measure: the argument must be a JSON object: {e}", file=sys.stderr)
        return 2
    print(json.dumps(run(spec)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
