"""The engine's global state, in one place: grad mode and the gradient sink (per thread, as
torch's grad mode is), anomaly mode and tracing hooks (process-wide; empty hook lists cost
nothing)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

anomaly_enabled = False
forward_hooks: list[Callable] = []  # hook(op, input_tensors, out_tensor, seconds)
backward_hooks: list[Callable] = []  # hook(op, input_index, parent_node, grad_array); the node
#   is the Context that produced the input, or the leaf Tensor itself


class _ThreadState(threading.local):
    """What each thread sees on its own; a new thread starts from these class defaults (grad
    on, gradients into `.grad`), as a new torch thread starts with grad mode on."""

    grad_enabled = True
    grad_sink: Any = None  # None, or an object whose accumulate(leaf, grad) takes leaf gradients
    tape: Any = None  # None, or an object whose record(op, inputs, attrs, node, out) sees each op


local = _ThreadState()


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
    return local.grad_enabled


@contextmanager
def set_grad_enabled(mode: bool) -> Iterator[None]:
    """Turn graph building on or off inside the block (in this thread only)."""
    prev, local.grad_enabled = local.grad_enabled, mode
    try:
        yield
    finally:
        local.grad_enabled = prev


def no_grad():
    """Context manager (`with no_grad():`): ops build no graph and save nothing for backward."""
    return set_grad_enabled(False)


@contextmanager
def grads_into(sink: Any) -> Iterator[None]:
    """Within this block, backward in this thread hands leaf gradients to `sink.accumulate(leaf,
    grad)` instead of adding them to `leaf.grad` (data-parallel workers sum their own gradients,
    then the caller adds the total: no two threads write one `.grad`)."""
    prev, local.grad_sink = local.grad_sink, sink
    try:
        yield
    finally:
        local.grad_sink = prev


@contextmanager
def recording(tape: Any) -> Iterator[None]:
    """Within this block, every op run in this thread is also handed to `tape.record(op,
    input_tensors, attrs, node, out_tensor)` (node: the graph Context, or None): how
    minitorch.replay captures a step. backward() inside the block raises (no tape sees it)."""
    prev, local.tape = local.tape, tape
    try:
        yield
    finally:
        local.tape = prev
