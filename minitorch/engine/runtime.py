"""The engine's runtime state, in one place: grad mode and the gradient sink (per thread, as
torch's grad mode is), anomaly mode and tracing hooks (process-wide; empty hook lists cost
nothing)."""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

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


class _GradMode:
    """Sets grad mode to `mode` inside a `with` block (restoring the previous mode on exit, also
    after an exception), or, as a decorator, around every call of the function. One object may
    be entered again, and nested: each entry restores what it found."""

    def __init__(self, mode: bool):
        self.mode = mode
        self._prev: list[bool] = []

    def __enter__(self) -> None:
        self._prev.append(local.grad_enabled)
        local.grad_enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        local.grad_enabled = self._prev.pop()

    def __call__(self, fn: Callable) -> Callable:
        mode = self.mode
        if inspect.isgeneratorfunction(fn):
            return _switched_generator(fn, mode)

        @functools.wraps(fn)
        def switched(*args: Any, **kwargs: Any) -> Any:
            with _GradMode(mode):  # a fresh switch per call: calls may nest or run in threads
                return fn(*args, **kwargs)

        return switched


def _switched_generator(fn: Callable, mode: bool) -> Callable:
    """A decorated generator function: the mode holds while its body runs (each step to the
    next yield), not while the caller works between steps, as torch's decorators do."""

    @functools.wraps(fn)
    def switched(*args: Any, **kwargs: Any) -> Any:
        gen, sent = fn(*args, **kwargs), None
        while True:
            with _GradMode(mode):
                try:
                    item = gen.send(sent)
                except StopIteration as stop:
                    return stop.value
            sent = yield item

    return switched


class _NoArgGradMode(_GradMode):
    """A switch that takes no argument, so it also decorates without parentheses (`@no_grad`),
    as torch's."""

    MODE = False

    def __new__(cls, orig_func: Callable | None = None) -> Any:
        return super().__new__(cls) if orig_func is None else cls()(orig_func)

    def __init__(self, orig_func: Callable | None = None):
        super().__init__(self.MODE)


class no_grad(_NoArgGradMode):  # noqa: N801  (torch's name)
    """`with no_grad():` (or `@no_grad` / `@no_grad()`): ops build no graph and save nothing for
    backward."""

    MODE = False


class enable_grad(_NoArgGradMode):  # noqa: N801
    """`with enable_grad():` (or `@enable_grad` / `@enable_grad()`): graph building on again,
    say inside a no_grad block."""

    MODE = True


class inference_mode(_GradMode):  # noqa: N801
    """torch.inference_mode: for minitorch exactly no_grad (mode=True), and enable_grad for
    mode=False, as torch's inference_mode(False) turns grad mode on. minitorch has no separate
    inference tensors: a tensor made inside may later join a graph, where torch refuses it."""

    def __new__(cls, mode: Any = True) -> Any:
        return cls()(mode) if callable(mode) else super().__new__(cls)  # bare @inference_mode

    def __init__(self, mode: bool = True):
        super().__init__(not mode)


class set_grad_enabled(_GradMode):  # noqa: N801
    """torch.set_grad_enabled(mode): switches grad mode at once, so a plain call turns it on or
    off for the rest of the thread; used as `with set_grad_enabled(mode):` (or a decorator) the
    previous mode comes back at the end."""

    def __init__(self, mode: bool):
        if not isinstance(mode, (bool, np.bool_)):
            raise TypeError(f"set_grad_enabled(): mode must be a bool, got {type(mode).__name__}")
        super().__init__(bool(mode))
        self._before = local.grad_enabled
        local.grad_enabled = self.mode

    def __enter__(self) -> None:
        pass  # switched already, in __init__

    def __exit__(self, *exc: object) -> None:
        local.grad_enabled = self._before

    def __call__(self, fn: Callable) -> Callable:
        local.grad_enabled = self._before  # as a decorator it switches only inside the calls
        return super().__call__(fn)


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
