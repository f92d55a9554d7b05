"""The op registry: every differentiable primitive is one `Op` subclass, registered by name.

An Op computes on raw NumPy arrays only. It never builds graph nodes and never holds a Tensor;
the engine (`tensor.apply` and `graph.backward`) does all bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


class Context:
    """One node of the graph: what an op's output remembers between forward and backward.

    `parents[i]` is the node input i came from: the Context that produced it, the leaf Tensor
    itself, or None when input i needs no gradient. Nodes never hold intermediate Tensors, so
    an op's output array is freed as soon as nothing else uses it, even while its graph lives.
    `needs_grad[i]` says whether input i wants a gradient, `saved` holds the raw arrays the vjp
    needs, `out_shape`/`out_dtype` describe the output. Ops may also set small attributes
    (axis, shape).
    `release()` drops all of it, so the graph is freed by reference counting alone.
    """

    def __init__(self, op: type[Op], parents: tuple, needs_grad: tuple[bool, ...]):
        self.op = op
        self.parents: tuple | None = parents
        self.needs_grad = needs_grad
        self.recording = any(needs_grad)
        self.saved: tuple = ()
        self.out_shape: tuple[int, ...] = ()
        self.out_dtype: Any = None

    def save(self, *arrays: Any) -> None:
        """Keep raw arrays for the vjp; a no-op when no input needs a gradient (no_grad)."""
        if self.recording:
            self.saved = arrays

    def needed(self, *grads: Any) -> tuple:
        """The gradients, with None where an input needs none (for rules whose gradients cost
        nothing to form; expensive rules test ctx.needs_grad before computing)."""
        return tuple(g if n else None for g, n in zip(grads, self.needs_grad))

    def release(self) -> None:
        """Drop parents, saved arrays and op attributes; keep only the op for error messages."""
        op = self.op
        self.__dict__.clear()
        self.op, self.parents, self.saved = op, None, ()


class Op:
    """Base class of a primitive: `forward(ctx, *arrays, **attrs) -> ndarray`,
    `vjp(ctx, grad_out) -> tuple` with one entry per input (None where not needed).

    Gradients are returned in the output's broadcast shape; the engine reduces them.
    """

    name: str = "op"
    differentiable: bool = True

    @staticmethod
    def forward(ctx: Context, *arrays: np.ndarray, **attrs: Any) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def vjp(ctx: Context, grad_out: np.ndarray) -> tuple:
        raise NotImplementedError(f"op '{ctx.op.name}' has no backward rule (vjp)")


REGISTRY: dict[str, type[Op]] = {}
COMPOSITES: dict[str, Callable] = {}


def register(name: str) -> Callable[[type[Op]], type[Op]]:
    """Class decorator: register an Op under a unique snake_case name."""

    def deco(cls: type[Op]) -> type[Op]:
        if name in REGISTRY or name in COMPOSITES:
            raise ValueError(f"op name '{name}' is already registered")
        cls.name = name
        REGISTRY[name] = cls
        return cls

    return deco


def composite(name: str) -> Callable[[Callable], Callable]:
    """Function decorator: list a function built only from registered ops (checked like an op)."""

    def deco(fn: Callable) -> Callable:
        if name in REGISTRY or name in COMPOSITES:
            raise ValueError(f"composite name '{name}' is already registered")
        COMPOSITES[name] = fn
        return fn

    return deco
