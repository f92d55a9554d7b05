"""The engine's global state, in one place: grad mode, anomaly mode and tracing hooks (empty hook
lists cost nothing)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

grad_enabled = True
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


def is_grad_enabled() -> bool:
    return grad_enabled


@contextmanager
def set_grad_enabled(mode: bool) -> Iterator[None]:
    """Turn graph building on or off inside the block."""
    global grad_enabled
    prev, grad_enabled = grad_enabled, mode
    try:
        yield
    finally:
        grad_enabled = prev


def no_grad():
    """Context manager (`with no_grad():`): ops build no graph and save nothing for backward."""
    return set_grad_enabled(False)
