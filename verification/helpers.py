"""Test-only helpers: register throwaway ops (removed again by a fixture finalizer, so the
coverage test never sees them)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from minitorch.engine.registry import COMPOSITES, REGISTRY, Op, register


def make_test_op(name: str, forward: Callable, vjp: Callable | None = None,
                 doc: str = "Test-only op.", differentiable: bool = True) -> type[Op]:
    """Register an Op named `name` from plain functions; the caller must remove it again."""
    body = {"__doc__": doc, "forward": staticmethod(forward), "differentiable": differentiable}
    if vjp is not None:
        body["vjp"] = staticmethod(vjp)
    return register(name)(type(f"TestOnly_{name}", (Op,), body))


@pytest.fixture(name="temp_op")
def temp_op_fixture():
    """temp_op(name, forward, vjp=None, ...) -> Op class; all of them leave REGISTRY afterwards."""
    names: list[str] = []

    def _make(name: str, forward: Callable, vjp: Callable | None = None, **kw) -> type[Op]:
        names.append(name)
        return make_test_op(name, forward, vjp, **kw)

    yield _make
    for name in names:
        REGISTRY.pop(name, None)
        COMPOSITES.pop(name, None)
