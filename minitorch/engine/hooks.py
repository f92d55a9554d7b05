"""Global switches read by the engine: anomaly mode and tracing hooks (empty lists cost nothing)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

anomaly_enabled = False
forward_hooks: list[Callable] = []  # hook(op, input_tensors, out_tensor, seconds)
backward_hooks: list[Callable] = []  # hook(op, input_index, parent_node, grad_array); the node
#   is the Context that produced the input, or the leaf Tensor itself


@contextmanager
def detect_anomaly() -> Iterator[None]:
    """Within this block, the first op whose forward or backward yields NaN/inf raises, naming
    it."""
    global anomaly_enabled
    prev, anomaly_enabled = anomaly_enabled, True
    try:
        yield
    finally:
        anomaly_enabled = prev
