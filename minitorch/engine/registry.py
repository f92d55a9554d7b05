"""The op registry: every differentiable primitive is one `Op` subclass, registered by name,
and every composite (a function of registered ops) is listed by name beside them.

An Op computes on raw NumPy arrays only. It never builds graph nodes and never holds a Tensor;
the engine (`tensor.apply` and `graph.backward`) does all bookkeeping (node.py: the nodes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .node import Context


class Op:
    """Base class of a primitive: `forward(ctx, *arrays, **attrs) -> ndarray`,
    `vjp(ctx, grad_out) -> tuple` with one entry per input (None where not needed).

    Gradients are returned in the output's broadcast shape; the engine reduces them. A vjp may
    write a gradient over grad_out only when `ctx.grad_out_writable` (nothing else holds it):
    it computes every gradient that reads grad_out first, and once a ufunc has written into
    `ctx.reuse(g)` it never reads grad_out's old values again.
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
