"""asv: the minitorch training step per preset and dtype, its forward and backward apart, its
peak memory, and the run's metadata (threads, seed, versions) as track_ values.

Batch 32, block 64, seeded weights and data (harness.SEED); BLAS threads pinned by harness.py.
This module never imports torch, so peakmem_ measures minitorch alone.
"""

from __future__ import annotations

import sys

import numpy as np

from minitorch.models.gpt import PRESETS

from . import harness as H
from . import machine

_blas = machine.blas()

PARAMS = (sorted(PRESETS), ["float32", "float64"])
NAMES = ["preset", "dtype"]
_STEPS: dict = {}


def _step(preset: str, dtype: str) -> H.MinitorchStep:
    """One warmed-up model per (preset, dtype) and process: asv re-runs setup before every
    timed call, so setup must stay cheap."""
    key = (preset, dtype)
    if key not in _STEPS:
        _STEPS[key] = H.MinitorchStep(H.config(preset), dtype)
        for _ in range(2):
            _STEPS[key]()  # creates Adam state and warms the allocator
    return _STEPS[key]


class TrainStep:
    """zero_grad, forward + loss, backward, Adam."""

    params, param_names = PARAMS, NAMES
    timeout = 300

    def setup(self, preset, dtype):
        self.step = _step(preset, dtype)

    def time_train_step(self, preset, dtype):
        self.step()

    def peakmem_train_step(self, preset, dtype):
        self.step()


def _default_step(preset: str, dtype: str) -> H.MinitorchStep:
    """The step `minitorch train` runs by default: one worker thread per core, replayed."""
    key = (preset, dtype, "default")
    if key not in _STEPS:
        _STEPS[key] = H.MinitorchStep(H.config(preset), dtype, workers=H.THREADS, replay=True)
        for _ in range(3):
            _STEPS[key]()  # captures the step, then replays it
    return _STEPS[key]


class TrainStepDefault:
    """The training step as `minitorch train` runs it by default (threads + replay). Trees
    without minitorch.parallel (older commits) fail setup and are skipped by asv."""

    params, param_names = PARAMS, NAMES
    timeout = 300

    def setup(self, preset, dtype):
        try:
            self.step = _default_step(preset, dtype)
        except ImportError as e:  # asv skips a benchmark whose setup raises NotImplementedError
            raise NotImplementedError(f"this commit has no threads/replay: {e}") from None

    def time_train_step(self, preset, dtype):
        self.step()


class Forward:
    """Forward + loss with graph recording (the training forward)."""

    params, param_names = PARAMS, NAMES
    timeout = 300

    def setup(self, preset, dtype):
        self.step = _step(preset, dtype)

    def time_forward(self, preset, dtype):
        self.step.model(self.step.idx, self.step.targets)


class Backward:
    """loss.backward() alone; setup (re-run before each timed call) builds the graph."""

    params, param_names = PARAMS, NAMES
    timeout = 300

    def setup(self, preset, dtype):
        step = _step(preset, dtype)
        step.opt.zero_grad()
        _, self.loss = step.model(step.idx, step.targets)

    def time_backward(self, preset, dtype):
        self.loss.backward()


class RunInfo:
    """The run's settings as numbers in the results; versions ride along in the parameter
    (asv stores parameter values with every result)."""

    params = [f"python {sys.version.split()[0]} numpy {np.__version__} "
              f"minitorch {H.mt.__version__} batch {H.BATCH} block {H.BLOCK} "
              f"{_blas['blas']} {_blas['blas_version']} threads {H.THREADS} "
              f"torch {machine._version('torch')} cpu {machine.name()}"]
    param_names = ["versions"]

    def track_blas_threads(self, _):
        return H.blas_threads()

    track_blas_threads.unit = "threads"

    def track_seed(self, _):
        return H.SEED

    track_seed.unit = "seed"
