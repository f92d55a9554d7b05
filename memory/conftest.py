"""Fixtures of the memory suite: child-process measurement runs (started as soon as collection
knows which tests need them, two at a time), gc control, the warmed-up workload of the memray
marker tests (with a negative control planted by --memory-plant), and `results`, written to
reports/artifacts/memory.json when the session ends.

Run without xdist: the children already use both cores.
"""

from __future__ import annotations

import contextlib
import gc
import platform
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pytest

from artifacts import write_json

from . import measure, workload

# Every child run the suite reads, by name. Leaking runs use B=2 and 60 steps: each step then
# leaks a few MB instead of the ~70 MB of a full batch, so the control stays fast and small.
# traced_small_batch is the leak control's twin (same B, gc off) with the graph released.
RUNS: dict[str, dict] = {
    "rss_gc_enabled": {"kind": "rss", "steps": 300, "gc": True},
    "rss_gc_disabled": {"kind": "rss", "steps": 300, "gc": False},
    "rss_replay": {"kind": "rss", "steps": 300, "replay": True},
    "traced_replay": {"kind": "traced", "steps": 30, "collect": True, "replay": True},
    "traced_replay_copies_control": {"kind": "traced", "steps": 10, "collect": True,
                                     "replay": True, "copy_grads": True},
    "traced": {"kind": "traced", "steps": 30, "collect": True},
    "traced_retained_loss_control": {"kind": "traced", "steps": 15, "collect": True,
                                     "retain_loss": True},
    "rss_leak_control": {"kind": "rss", "steps": 60, "gc": False, "leak": True, "batch": 2},
    "traced_small_batch": {"kind": "traced", "steps": 10, "gc": False, "batch": 2},
    "traced_leak_control": {"kind": "traced", "steps": 60, "gc": False, "leak": True,
                            "batch": 2},
    "traced_native_leak_control": {"kind": "traced", "steps": 15, "collect": True,
                                   "native_leak": "strdup"},
    "memray_gc_enabled": {"kind": "memray", "steps": 300},
    "memray_native_leak_control": {"kind": "memray", "steps": 60, "native_leak": "strdup"},
    "memray_leak_control": {"kind": "memray", "steps": 60, "gc": False, "leak": True,
                            "batch": 2},
    "rss_ctypes_malloc_leak_control": {"kind": "rss", "steps": 60,
                                       "native_leak": "ctypes_malloc"},
    "memray_ctypes_malloc_leak_control": {"kind": "memray", "steps": 60,
                                          "native_leak": "ctypes_malloc"},
}
# --memory-plant: the negative controls of the memray marker tests (test_mem_memray.py), each
# with the steps it runs instead of 300. Fewer steps leak less, so a control caught in fewer
# steps would be caught in 300; the graph leak keeps ~70 MB per step, so 3 steps are plenty.
PLANTS = {"native": (workload.native_leak_planted, 30),
          "cycle": (workload.graph_release_disabled, 3)}
WARMUP = 5  # untracked steps: Adam state, gradients, OpenBLAS's 32 MB work buffer
_RESULTS: dict = {}


class ChildRuns:
    """Starts named RUNS in child processes (at most two at once) and caches their results."""

    def __init__(self):
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict[str, Future] = {}
        self._procs: list = []
        self._closing = False
        self._lock = threading.Lock()

    def start(self, names: list[str]) -> None:
        for name in names:
            if name not in RUNS:
                raise KeyError(f"unknown memory run {name!r}; known: {sorted(RUNS)}")
            if name not in self._futures:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memrun")
                self._futures[name] = self._pool.submit(self._run, name)

    def get(self, name: str) -> dict:
        self.start([name])
        return self._futures[name].result()

    def close(self) -> None:
        """Cancel runs not started and stop running children (the session ended early)."""
        if self._pool is None:
            return
        with self._lock:
            self._closing = True
            for proc in self._procs:
                if proc.poll() is None:
                    proc.kill()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _run(self, name: str) -> dict:
        return measure.in_child(RUNS[name], started=self)

    def append(self, proc) -> None:
        """Called by measure.in_child with each child it starts (killed at once if closing)."""
        with self._lock:
            self._procs.append(proc)
            if self._closing:
                proc.kill()


_CHILD_RUNS = ChildRuns()


def pytest_addoption(parser):
    parser.addoption("--memory-plant", choices=sorted(PLANTS), default=None,
                     help="negative control: plant a leak in the memray marker tests' steps "
                          "(test_mem_memray.py runs itself this way to show the markers fail)")


def pytest_configure(config):
    config.addinivalue_line("markers", "memory_runs(*names): child runs (memory/conftest.RUNS) "
                                       "the test reads; started early, two at a time")


def pytest_collection_finish(session):
    """Start every run a selected test will read, longest first, before the first test runs."""
    if session.config.option.collectonly:
        return
    wanted = {name for item in session.items for mark in item.iter_markers("memory_runs")
              for name in mark.args}
    spec = lambda n: {**measure.DEFAULTS, **RUNS[n]}  # noqa: E731
    _CHILD_RUNS.start(sorted(wanted, key=lambda n: -spec(n)["steps"] * spec(n)["batch"]))


@pytest.fixture(scope="session")
def child_runs() -> ChildRuns:
    return _CHILD_RUNS


@pytest.fixture
def run(request, child_runs):
    """run(name) -> the result dict of a child run named in this test's memory_runs marker."""
    allowed = {n for mark in request.node.iter_markers("memory_runs") for n in mark.args}

    def _get(name: str) -> dict:
        if name not in allowed:
            raise KeyError(f"{request.node.name} reads run {name!r} without declaring it in "
                           "@pytest.mark.memory_runs(...)")
        return child_runs.get(name)

    return _get


@pytest.fixture
def gc_disabled():
    """The cyclic GC off for the test (reference counting alone frees memory)."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@pytest.fixture
def memray_workload(request, gc_disabled):
    """(workload after WARMUP steps, steps to run) for the memray marker tests, with the
    --memory-plant control active until the test ends.

    pytest-memray tracks only the test function's call, so what the warm-up allocates once
    (Adam state, gradients, OpenBLAS's work buffer) is outside what the markers count.
    """
    plant = request.config.getoption("memory_plant")
    control, steps = PLANTS[plant] if plant else (contextlib.nullcontext, 300)
    with control():
        work = workload.Workload()
        work.run(WARMUP)
        yield work, steps


@pytest.fixture
def leaky_engine():
    """Negative control: graph release off and each output attached to its own Context."""
    with workload.graph_release_disabled():
        yield


@pytest.fixture(scope="session")
def results() -> dict:
    """Sections of memory.json; each test fills in its own key."""
    return _RESULTS


def pytest_sessionfinish(session, exitstatus):
    _CHILD_RUNS.close()
    if _RESULTS:
        write_json("memory.json", {
            "workload": {"preset": "seed", "dtype": np.dtype(workload.DTYPE).name,
                         "batch": workload.BATCH, "seq_len": workload.SEQ_LEN,
                         "optimizer": "Adam(lr=1e-3)", "blas_threads": 1,
                         "python": platform.python_version(), "numpy": np.__version__},
            **_RESULTS,
        })
