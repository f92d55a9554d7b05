"""Data parallelism over threads: one batch split along dim 0 across worker threads, each running
forward and backward on its rows, their gradients summed into `.grad` in a fixed order.

NumPy runs elementwise ufuncs and batched matmuls on one core; its ufuncs and BLAS release the
GIL, so W workers, each with a one-thread BLAS, keep W cores busy on all of a step. Each worker
builds its own graph and hands leaf gradients to its own sink (engine/runtime.grads_into), so no
two threads write one array. This module computes nothing itself and knows no model.
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from . import blas
from .engine import Tensor, graph, runtime
from .replay import Replay, eager_backward


class _Sink:
    """One worker's leaf gradients, summed as backward sums a node's (graph.add_pending)."""

    def __init__(self) -> None:
        self.leaves: dict[int, Tensor] = {}  # id(leaf) -> leaf, in arrival order
        self.grads: dict[int, np.ndarray] = {}  # id(leaf) -> summed gradient

    def accumulate(self, leaf: Tensor, grad: np.ndarray) -> None:
        self.leaves.setdefault(id(leaf), leaf)
        graph.add_pending(self.grads, id(leaf), grad)


class DataParallel:
    """Run `fn(*inputs)` on `workers` row shards of the inputs at once and backward each.

    Args:
        workers: threads (>= 1); each runs one shard with OpenBLAS pinned to one thread. One
            worker runs `fn` inline, exactly as `fn(*inputs).backward()` would.
        replay: each shard replays its captured op sequence (minitorch.replay.Replay) instead
            of building a graph, after its first step.

    Usage: `loss = DataParallel(2).backward(lambda x, y: model(x, y)[1], x, y)` in place of
    `loss = model(x, y)[1]; loss.backward()`. `fn` must return a one-element loss Tensor that is
    the *mean* over its rows (dim 0 of the inputs), as a batch loss usually is: shard k's loss
    is weighted by its share of the rows, n_k/N, so the summed gradient is that of the mean
    over all N rows (to rounding; the order of sums differs from one whole-batch backward). A
    `fn` drawing random numbers from a shared generator draws them in thread order.
    """

    def __init__(self, workers: int, replay: bool = False):
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ValueError(f"DataParallel: workers must be an int >= 1, got {workers!r}")
        self.workers = workers
        self._pool = ThreadPoolExecutor(workers - 1, "minitorch-dp") if workers > 1 else None
        # replay=True: each shard replays its captured step (minitorch.replay), one tape each
        self.replays = [Replay() for _ in range(workers)] if replay else None

    def _shard(self, k: int, fn: Callable[..., Tensor], inputs: tuple, scale: float) -> float:
        if self.replays is None:
            return eager_backward(fn, inputs, scale)
        return self.replays[k].backward(fn, *inputs, scale=scale)

    def close(self) -> None:
        """Stop the worker threads (also done at interpreter exit)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self) -> DataParallel:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def backward(self, fn: Callable[..., Tensor], *inputs: Any) -> float:
        """Forward and backward of `fn` over the inputs' rows; returns the mean loss (a float).

        Gradients are added to each leaf's `.grad` (accumulating, as backward does) only after
        every shard has finished; if any shard raises, the first error (by shard) is raised and
        no `.grad` is changed.
        """
        if not inputs:
            raise ValueError("DataParallel.backward: no inputs to split")
        n = len(inputs[0])
        for i, x in enumerate(inputs):
            if len(x) != n:
                raise ValueError(f"DataParallel.backward: input {i} has {len(x)} rows, input 0 "
                                 f"has {n}; all inputs are split along dim 0 together")
        if self._pool is None or n < 2:
            return self._shard(0, fn, inputs, 1.0)
        bounds = np.linspace(0, n, min(self.workers, n) + 1).round().astype(int)
        shards = [(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
        mode, errs = runtime.local.grad_enabled, np.geterr()

        def run(k: int, lo: int, hi: int) -> tuple[_Sink | None, float | BaseException]:
            sink = _Sink()
            try:
                with runtime.set_grad_enabled(mode), np.errstate(**errs), runtime.grads_into(sink):
                    share = (hi - lo) / n
                    loss = self._shard(k, fn, tuple(x[lo:hi] for x in inputs), share)
                return sink, share * loss
            except Exception as e:  # noqa: BLE001  (raised by the caller, once all are done)
                # the frames' locals hold this shard's graph (its saved arrays read-only):
                # free it now, not when the caller drops the exception
                traceback.clear_frames(e.__traceback__)
                return None, e

        with blas.limit_threads(1):
            futures = [self._pool.submit(run, k, lo, hi) for k, (lo, hi) in enumerate(shards)
                       if k]
            results = [run(0, *shards[0])] + [f.result() for f in futures]
        del futures
        errors = [e for sink, e in results if sink is None]
        if errors:
            try:
                raise errors[0]
            finally:  # no cycle exception -> traceback -> this frame -> exception
                del errors, results
        _reduce([sink for sink, _ in results])
        return math.fsum(value for _, value in results)


def _reduce(sinks: list[_Sink]) -> None:
    """Add the shards' gradients to each leaf's .grad, summed in shard order (or hand them to
    this thread's sink, as backward would: inside another DataParallel's worker)."""
    leaves: dict[int, Tensor] = {}
    for sink in sinks:
        for key, leaf in sink.leaves.items():
            leaves.setdefault(key, leaf)
    for key, leaf in leaves.items():
        parts = [sink.grads[key] for sink in sinks if key in sink.grads]
        total = parts[0]
        for part in parts[1:]:
            total = total + part
        graph._accumulate_leaf(leaf, total)
